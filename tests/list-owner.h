/* Lock ownership by identity (tests/test_owner.c). */
TEST(owner_not_inherited_with_descriptor)
TEST(owner_recursive_trylock_counts)
