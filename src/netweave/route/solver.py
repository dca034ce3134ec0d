"""The LP/MILP solver, HiGHS, made in one place: silent on stdout and on one thread.

Two things about ``highspy`` matter to a command whose stdout is its result:

* from 1.16 on, ``highspy.Highs()`` prints a two-line banner on stdout from C++ when it is made,
  whatever its options say; :func:`new_highs` points file descriptor 1 at ``/dev/null`` while it
  makes one and sets ``output_flag`` off for the solve;
* its thread pool does not survive ``fork()``: a child forked from a process that has solved
  spins in the pool's teardown. Solvers run on one thread (``threads=1``: the models here solve in
  milliseconds to seconds, where threads gain nothing), and process pools do not fork
  (:mod:`netweave.cases` uses ``forkserver``).
"""

from __future__ import annotations

import highspy

from .._stdout import stdout_to_stderr


def new_highs() -> highspy.Highs:
    """A HiGHS instance that prints nothing on stdout and solves on one thread."""
    with stdout_to_stderr(discard=True):  # the banner: nothing a user needs, on either stream
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    return h
