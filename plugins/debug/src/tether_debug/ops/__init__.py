"""The ``debug`` tool's ops, one function per op taking the run's
:class:`~tether_debug.supervisor.DebugSupervisor`, grouped by what they do: breakpoints,
inspection (threads, stack, scopes, variables, evaluate, set_variable), control (resume,
pause, run_to, output, terminate) and lifecycle (adapters, launch, attach, status)."""
