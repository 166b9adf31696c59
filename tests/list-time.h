/* Absolute deadlines at the edges (tests/test_time.c). */
TEST(time_far_future_deadline_waits)
TEST(time_past_deadline_tries_once)
