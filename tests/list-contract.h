/* Rows of docs/GUIDE.md's error table that no other test asserted (tests/test_contract.c). */
TEST(contract_rwlock_reader_total_never_wraps)
TEST(contract_init_refused_thread_or_timer)
