/* Synchronization, bad-input and stress tests. */
