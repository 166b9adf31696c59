/* The scheduler trace, URSA_TRACE=file (tests/test_trace.c). */
TEST(trace_two_vps_ring_json)
TEST(trace_off_writes_nothing)
TEST(trace_unwritable_path_runs_normally)
TEST(trace_one_vp_idle_timeout_written_at_exit)
TEST(trace_deadlock_exit_writes_file)
TEST(trace_event_limit_drops_and_says_so)
TEST(trace_cp_ts_preemption_marked)
