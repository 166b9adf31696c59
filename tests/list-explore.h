/* Schedule exploration (tests/test_explore.c; src/explore/, docs/GUIDE.md "Finding concurrency bugs"). */
TEST(explore_same_seed_same_schedule)
TEST(explore_finds_each_planted_bug)
TEST(explore_replay_reproduces_failure)
TEST(explore_correct_programs_pass)
TEST(explore_bad_input)
TEST(explore_virtual_time)
TEST(explore_vps_seen_and_io_refused)
