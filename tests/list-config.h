/* Settings from ursa_config_t and the environment (tests/test_config.c). */
TEST(config_env_sizes_never_wrap)
TEST(config_env_words_and_flags_checked)
TEST(config_env_good_values_taken)
TEST(config_limits_are_errors)
TEST(config_strerror_any_int)
