"""A training job's name and rank from its environment and command line: one rule for the
job's own output (integrations/training_output.py, inside the job) and for the agent's watch
of it (collectors/jobs.py, from /proc/<pid>/environ and cmdline), so their points join."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Mapping, Sequence

from diskprobe.sources.u64 import parse_u64

MAX_RANK = 10**9  # nine digits: far beyond any job's ranks
# The global rank as torchrun, DeepSpeed and Open MPI's mpirun set it, then the local one.
RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "LOCAL_RANK")
ENVIRONMENT = ("DISKPROBE_JOB", "TORCHELASTIC_RUN_ID", *RANK_VARIABLES)  # all a job's tags need
PYTHON = re.compile(r"python[0-9.]*")
# Programs that start ranks and wait for them: never a job of their own (by argv[0]'s name, or
# the module of `python -m`).
LAUNCHERS = frozenset({"torchrun", "deepspeed", "mpirun", "mpiexec", "orterun", "prterun",
                       "horovodrun", "accelerate", "srun"})  # fmt: skip
LAUNCHER_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch",
                              "deepspeed.launcher.runner",
                              "accelerate.commands.launch"})  # fmt: skip
# Python's options that take the next argument (python -W error train.py).
PYTHON_ARGUMENTS = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def job_name(env: Mapping[str, str], script: str) -> str:
    """DISKPROBE_JOB, else TORCHELASTIC_RUN_ID (torchrun's "none" is none), else the script's
    name (`script`: sys.argv[0] inside the job, script_name(argv) from outside)."""
    run_id = env.get("TORCHELASTIC_RUN_ID", "")
    name = env.get("DISKPROBE_JOB") or (run_id if run_id not in ("", "none") else "")
    return name or PurePath(script or "python").stem or "python"


def parse_rank(text: str) -> int | None:
    """A rank as launchers write it; anything else ("-1", "²", 5,000 digits) is none."""
    rank = parse_u64(text)
    return rank if rank is not None and rank < MAX_RANK else None


def job_rank(env: Mapping[str, str]) -> int:
    """RANK, else OMPI_COMM_WORLD_RANK, else LOCAL_RANK; 0 for a single process."""
    for variable in RANK_VARIABLES:
        rank = parse_rank(env.get(variable, ""))
        if rank is not None:
            return rank
    return 0


def own_rank(env: Mapping[str, str]) -> tuple[str, ...]:
    """The launcher's rank variables as set for this process (empty: none): a process whose
    tuple differs from its parent's was started as a rank of its own (torchrun, mpirun)."""
    values = tuple(env.get(variable, "") for variable in RANK_VARIABLES)
    return values if any(values) else ()


def script_name(argv: Sequence[str]) -> str:
    """What sys.argv[0] is inside the process: the script of `python [options] script.py`,
    the module of `python -m pkg.module` (its last part), `-c` for a command; else argv[0]."""
    if not argv:
        return ""
    if not PYTHON.fullmatch(PurePath(argv[0]).name):
        return argv[0]
    words = iter(argv[1:])
    for word in words:
        if word in ("-m", "-c"):
            return next(words, "").rpartition(".")[2] if word == "-m" else word
        if word.startswith("-m") and len(word) > 2:
            return word[2:].rpartition(".")[2]
        if word in PYTHON_ARGUMENTS:
            next(words, None)
        elif not word.startswith("-") or word == "-":
            return word
    return argv[0]


def is_launcher(argv: Sequence[str]) -> bool:
    """torchrun, deepspeed, mpirun... or `python -m torch.distributed.run`."""
    if not argv:
        return False
    program = PurePath(argv[0]).name
    if program in LAUNCHERS:
        return True
    if not PYTHON.fullmatch(program):
        return False
    if len(argv) > 2 and argv[1] == "-m":
        return argv[2] in LAUNCHER_MODULES
    return PurePath(script_name(argv)).name in LAUNCHERS  # python /usr/bin/torchrun ...
