"""The sandbox host: bubblewrap command lines, cgroups, the system-call filter, staging."""
