"""The pure rules behind the agent's job watch and `diagnose`: which thread is what
(compute/thread_roles.py), which processes make a job (compute/job_groups.py), a job's name
and rank (compute/job_names.py), and the verdict when the main thread waits on its runtime's
threads (compute/bottleneck.py). No process runs: each case is the shape a real stack has."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diskprobe.compute.bottleneck import BOTTLENECKS, Counts, decide
from diskprobe.compute.job_groups import JobRoot, job_members, job_roots
from diskprobe.compute.job_names import (
    ENVIRONMENT,
    is_launcher,
    job_name,
    job_rank,
    own_rank,
    script_name,
)
from diskprobe.compute.thread_roles import (
    INPUT_READ_BYTES,
    MAIN,
    RUNTIME,
    WORKER,
    ThreadFacts,
    group_threads,
    thread_role,
)
from diskprobe.sources.file_places import Place
from diskprobe.sources.job_procs import parse_cmdline, parse_environ
from diskprobe.sources.procio import parse_rchar
from diskprobe.sources.tasks import parse_task_stat

DATA = Place("loop3", "/mnt/data")


def counts(running: int = 0, sleeping: int = 0, futex: int = 0, reads: int = 0,
           accelerator: int = 0) -> Counts:  # fmt: skip
    found = Counts(samples=running + sleeping + futex + reads + accelerator, running=running,
                   sleeping=sleeping + futex, thread_waits=futex, accelerator=accelerator)
    if reads:
        found.file_waits[("read", DATA)] = reads
    return found


def thread(facts: Counts, main_process: bool = True, main_thread: bool = False,
           read: int | None = 0, name: str = "python") -> ThreadFacts:  # fmt: skip
    return ThreadFacts(facts, main_process, main_thread, read, name)


def test_roles_rest_on_what_a_thread_does_not_on_its_name() -> None:
    busy = counts(running=90, futex=10)
    assert thread_role(thread(busy, main_thread=True)) == MAIN
    assert thread_role(thread(busy)) == RUNTIME  # TensorFlow's Eigen pool: named "python"
    assert thread_role(thread(busy, name="tf_XLAEigen")) == RUNTIME
    assert thread_role(thread(busy, main_process=False)) == WORKER  # a DataLoader worker
    assert thread_role(thread(busy, read=INPUT_READ_BYTES)) == WORKER  # tf.data's map reads
    assert thread_role(thread(busy, read=INPUT_READ_BYTES - 1)) == RUNTIME  # an eventfd's 8 B
    assert thread_role(thread(counts(reads=5, futex=95))) == WORKER  # seen waiting on a file
    assert thread_role(thread(busy, name="tf_data_private")) == WORKER
    assert thread_role(thread(busy, read=None)) == RUNTIME  # io unreadable: by what is seen


def test_accelerator_time_is_the_runtimes_wherever_it_is_seen() -> None:
    groups = group_threads([thread(counts(futex=100), main_thread=True),
                            thread(counts(accelerator=60, futex=40), main_process=False),
                            thread(counts(accelerator=30, futex=70))])  # fmt: skip
    assert (groups.runtime.accelerator, groups.workers.accelerator) == (90, 0)
    assert (groups.workers.samples, groups.workers.sleeping) == (40, 40)


def verdict(main: Counts, workers: Counts, runtime: Counts) -> str:
    return decide(main, workers, 100, set(), None, runtime).bottleneck


def test_a_main_thread_waiting_on_its_runtimes_busy_pool_is_compute() -> None:
    """Keras on TensorFlow, JAX: the loop waits in futex while the step's pool runs."""
    main, idle_input = counts(futex=99, running=1), counts(running=2, futex=98)
    assert verdict(main, idle_input, counts(running=190, futex=10)) == "compute"
    gpu = counts(accelerator=150, futex=50)  # kernels launched from the runtime's threads
    assert verdict(main, idle_input, gpu) == "compute"
    # The rule before: every other thread a loader worker, so the same job was input_cpu.
    assert decide(main, counts(running=192, futex=108), 100, set()).bottleneck == "input_cpu"


def test_loaders_busier_than_the_pool_still_decide() -> None:
    main = counts(futex=95, running=5)
    pool = counts(running=20, futex=80)  # the step's pool, briefly busy each step
    assert verdict(main, counts(reads=160, running=20, futex=20), pool) == "disk"
    assert verdict(main, counts(running=180, futex=20), pool) == "input_cpu"
    assert verdict(main, counts(futex=200), counts(futex=200)) == "idle"


def test_a_pool_spinning_while_the_loop_waits_on_a_loaders_pipe_is_not_the_step() -> None:
    """PyTorch's loop waits in poll() on its DataLoader's pipe; an OpenMP team spinning after
    each step (KMP_BLOCKTIME) runs more than the loaders do: still input-bound."""
    main = counts(sleeping=95, running=5)  # poll/read on a pipe: no futex
    loaders = counts(reads=50, running=10, futex=140)
    assert verdict(main, loaders, counts(running=150, futex=50)) == "disk"
    assert verdict(counts(futex=95, running=5), loaders, counts(running=150, futex=50)) \
        == "compute"  # fmt: skip


def parents_of(*edges: tuple[int, int]) -> dict[int, int]:
    return dict(edges)


def test_workers_forked_with_the_same_command_line_belong_to_their_job() -> None:
    parents = parents_of((100, 1), (101, 100), (102, 100), (103, 101))
    roots = job_roots({100: (), 101: (), 102: ()}, parents, lambda pid: "python")
    assert roots == [JobRoot(100, 100, ())]
    assert job_members(100, parents, set()) == {100, 101, 102, 103}


def test_each_rank_is_a_job_and_the_launcher_gets_none() -> None:
    """torchrun (no rank) started two ranks (RANK set for each); their loaders inherit it."""
    parents = parents_of((10, 1), (11, 10), (12, 10), (13, 11), (14, 12))
    candidates = {10: (), 11: ("0", "", "0"), 12: ("1", "", "1"), 13: ("0", "", "0"),
                  14: ("1", "", "1")}  # fmt: skip
    roots = job_roots(candidates, parents, lambda pid: "python")
    assert [root.main for root in roots] == [11, 12]
    assert job_members(11, parents, {12}) == {11, 13}
    named = job_roots({10: (), 11: ()}, parents_of((10, 1), (11, 10)), lambda pid: "x", {10})
    assert named == []  # a launcher by name, before its ranks are looked at


def test_a_wrapper_with_one_child_is_passed_through_to_the_main_process() -> None:
    parents = parents_of((50, 1), (51, 50), (52, 51), (53, 52))
    comms = {50: "tini", 51: "sh", 52: "python", 53: "python"}
    assert job_roots({50: ()}, parents, comms.__getitem__) == [JobRoot(50, 52, (50, 51))]
    looped = parents_of((7, 8), (8, 7))  # a corrupt table: the walk ends
    assert job_roots({7: (), 8: ()}, looped, lambda pid: "python") == []  # and no hang


def test_names_and_ranks_as_the_training_output_gives_them() -> None:
    assert job_name({"DISKPROBE_JOB": "resnet"}, "x.py") == "resnet"
    assert job_name({"TORCHELASTIC_RUN_ID": "none"}, "/opt/train.py") == "train"
    assert job_name({"TORCHELASTIC_RUN_ID": "r7"}, "/opt/train.py") == "r7"
    assert job_rank({"RANK": "3", "LOCAL_RANK": "1"}) == 3
    assert job_rank({"OMPI_COMM_WORLD_RANK": "5"}) == 5
    assert job_rank({"RANK": "-1"}) == 0 and job_rank({"RANK": "9" * 5000}) == 0
    assert own_rank({}) == () and own_rank({"LOCAL_RANK": "0"}) == ("", "", "0")


@pytest.mark.parametrize(("argv", "script"), [
    (["python3", "-u", "train.py", "--lr", "1"], "train.py"),
    (["/usr/bin/python3.11", "-W", "error", "-X", "dev", "/opt/job.py"], "/opt/job.py"),
    (["python", "-m", "pkg.trainer", "x"], "trainer"),
    (["python", "-mtrainer"], "trainer"),
    (["python", "-c", "print(1)"], "-c"),
    (["/opt/bin/trainer", "--epochs", "3"], "/opt/bin/trainer"),
    (["python"], "python"),
    ([], ""),
])  # fmt: skip
def test_the_script_name_is_what_sys_argv_0_would_be(argv: list[str], script: str) -> None:
    assert script_name(argv) == script


def test_launchers_are_known_by_name() -> None:
    assert is_launcher(["/usr/local/bin/torchrun", "--nproc-per-node", "8", "train.py"])
    assert is_launcher(["python3", "-m", "torch.distributed.run", "train.py"])
    assert is_launcher(["python3", "/usr/local/bin/deepspeed", "train.py"])
    assert is_launcher(["mpirun", "-n", "4", "python", "train.py"])
    assert not is_launcher(["python3", "train.py", "--launcher", "torchrun"])
    assert not is_launcher([])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_the_job_watchs_parsers_take_any_bytes(data: bytes) -> None:
    """What a hostile or half-written /proc file gives each parser the job watch uses: a
    value of the right type or None, never an exception."""
    assert parse_rchar(data) is None or 0 <= int(parse_rchar(data) or 0) < 2**64
    assert all(isinstance(word, str) for word in parse_cmdline(data))
    environ = parse_environ(data, ENVIRONMENT)
    assert set(environ) <= set(ENVIRONMENT) and all(isinstance(v, str) for v in environ.values())
    stat = parse_task_stat(data)
    assert stat is None or (stat.cpu_ticks >= 0 and len(stat.state) <= 1)
    script_name(parse_cmdline(data))
    is_launcher(parse_cmdline(data))
    job_name(environ, script_name(parse_cmdline(data)))
    job_rank(environ)


shares = st.integers(0, 200)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(shares, shares, shares, shares, shares, st.booleans(), st.booleans(),
                          st.one_of(st.none(), st.integers(0, 2**40))), max_size=12))
def test_any_mix_of_threads_gives_one_known_verdict(threads: list) -> None:  # type: ignore[type-arg]
    facts = [thread(counts(running, sleeping, futex, reads, accelerator), main_process,
                    index == 0, read) for index, (running, sleeping, futex, reads, accelerator,
                                                  main_process, _, read) in enumerate(threads)]
    groups = group_threads(facts)
    assert groups.workers.accelerator == 0  # accelerator time is always the runtime's
    result = decide(groups.main, groups.workers, 200, set(), None, groups.runtime)
    assert result.bottleneck in BOTTLENECKS
