"""Token and instance states, the transition table, and what each node does to a token."""
