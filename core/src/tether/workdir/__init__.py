"""The workdir's files: every read (:mod:`~tether.workdir.reading`), every write, atomic and all
or nothing (:mod:`~tether.workdir.writing`), the journal that makes a run's writes undoable
(:mod:`~tether.workdir.journal`), and keeping paths inside the workdir
(:mod:`~tether.workdir.paths`)."""
