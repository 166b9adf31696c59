/* Lock-free queues of the SMP scheduler, header-only (src/sched/waiverq.h, src/sched/deque.h),
 * on plain POSIX threads (tests/test_queues.c). */
TEST(queues_wq_fifo_basic)
TEST(queues_wq_spsc_stress)
TEST(queues_wq_batch_basic)
TEST(queues_wq_batch_stress)
TEST(queues_wq_ring_rotator)
TEST(queues_deque_basic)
TEST(queues_deque_steal_stress)
