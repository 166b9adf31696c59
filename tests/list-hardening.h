/* Issue #22's hardening items (tests/test_hardening.c). */
TEST(hardening_dump_while_vp_releases)
TEST(hardening_dump_signal_while_vp_releases)
TEST(hardening_region_init_twice_refused)
TEST(hardening_region_freed_storage_isolated)
TEST(hardening_create_in_destroyed_region)
TEST(hardening_fork_several_vps_child_refused)
TEST(hardening_fork_one_vp_child_continues)
