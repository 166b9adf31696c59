/* Context, stack, deadlock and exit tests. */
