"""Running the user's program: the first run's watch, the replay under recording, the sandbox,
and the verification that runs each candidate edit before it is called the fix."""
