"""The run's child processes: spawning and owning them (:mod:`~tether.processes.managed`,
:mod:`~tether.processes.owner`), what a workdir may make a program run and where it may write
(:mod:`~tether.processes.launch`, :mod:`~tether.processes.confine`), finding a command that runs
(:mod:`~tether.processes.availability`), telling a hung child from a busy one
(:mod:`~tether.processes.hang`), reading the process table (:mod:`~tether.processes.procinfo`),
and killing what is left when the run's own process dies (:mod:`~tether.processes.watchdog`)."""
