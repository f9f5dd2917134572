"""Edge policy: pure functions over an immutable routing snapshot, returning decisions."""
