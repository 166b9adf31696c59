/* Issue #22's hardening items (tests/test_hardening.c). */
TEST(hardening_dump_while_vp_releases)
TEST(hardening_dump_signal_while_vp_releases)
