/* The seeded API fuzzer (tests/test_fuzz.c). */
TEST(fuzz_api_short)
TEST(fuzz_api_long)      /* skips unless URSA_FUZZ_OPS is set: make fuzz */
TEST(fuzz_regress_key_create_two_vps)
