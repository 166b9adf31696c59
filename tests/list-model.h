/* Execution models and preemption (tests/test_model.c). */
TEST(model_select)
TEST(model_bad_configuration)
TEST(model_busy_loops_progress)
TEST(model_tick_counts)
TEST(model_preempt_disabled_section)
TEST(model_preempted_thread_keeps_its_vp)
TEST(model_malloc_stdio_preempted)
TEST(model_timed_waits_short_quanta)
