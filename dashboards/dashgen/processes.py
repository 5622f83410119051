"""The I/O dashboard's two process tables, side by side: who moves the bytes and who waits.

diskprobe_process_io reports the top processes by bytes and, with delay accounting on, the
top processes by time blocked on block I/O (blkio_wait_ratio). The two rankings differ where
it matters: a process doing slow random 4 KiB reads moves few bytes and waits the most.
"""

from __future__ import annotations

from dashgen.build import agg, tags
from dashgen.model import Column, Panel, Target
from dashgen.query import Select
from dashgen.refs import PROCESS_IO, Field, quote, same_unit

BY = ("host", "process", "user")  # one series per process name and user (PIDs are fields)


def _process_cells() -> tuple[tuple[Field, str], ...]:
    """The columns both tables show after the one they rank by: (field, title)."""
    f = PROCESS_IO.f
    return ((f("read_bytes_per_sec"), "read"), (f("write_bytes_per_sec"), "write"),
            (f("pid"), "PID"), (f("cmdline"), "command line"), (f("cgroup"), "cgroup"))


def _process_table(title: str, description: str, ranked: Column, columns: list[str]) -> Panel:
    """The selected hosts' processes (a row per BY), highest `ranked` first; `columns` are
    the SELECT's: `ranked`'s, then those of _process_cells. Half the board's width."""
    select = Select(
        columns=", ".join(columns),
        measurement=PROCESS_IO.name,
        filters=tags(PROCESS_IO, "host"),
        group_tags=tags(PROCESS_IO, *BY),
    )
    return Panel(
        title=title,
        description=description,
        kind="table",
        targets=(Target(select, ranked.unit),),
        width=12,
        height=9,
        columns=(ranked, *(Column(field.name, field.unit, heading)
                           for field, heading in _process_cells())),
        sort_by=ranked.name,
        sort_desc=True,
    )


def top_processes() -> Panel:
    read, write = PROCESS_IO.f("read_bytes_per_sec"), PROCESS_IO.f("write_bytes_per_sec")
    return _process_table(
        "Top processes by storage I/O",
        f"The processes {PROCESS_IO.name} reported (the iotop view: bytes that reached "
        "the block layer, above min_bytes_per_sec), with their last values in the time "
        "range, busiest first. A process that stopped doing I/O keeps its last rate here; "
        "narrow the time range to see who is busy now.",
        Column("total_bytes_per_sec", same_unit(read, write), "read + write"),
        [f"last({read}) + last({write}) AS {quote('total_bytes_per_sec')}"]
        + [agg("last", field) for field, _ in _process_cells()],
    )


def who_waits() -> Panel:
    """Each process's last point that carried a wait: one selector beside plain fields
    returns that one point (its rates, pid and command line, and its time as the row's)."""
    wait = PROCESS_IO.f("blkio_wait_ratio")
    return _process_table(
        "Who waits on disk",
        f"The processes by their last {wait.name}: seconds their threads spent blocked on "
        "block I/O per second (1 is one thread waiting all the time; threads and "
        "same-name processes add up), with that point's rates, PID, command line and "
        "cgroup, longest waiting first. Needs the kernel's delay accounting: sysctl "
        "kernel.task_delayacct=1 (or delayacct on the kernel command line); without it "
        "the table is empty. A process doing slow random 4 KiB reads waits most while "
        "moving few bytes, so it can top this table and be missing from the one by bytes.",
        # No Grafana unit for seconds per second: the title carries it.
        Column(wait.name, wait.unit, "blocked on I/O (s/s)"),
        [agg("last", wait)] + [f"{field} AS {quote(field.name)}" for field, _ in _process_cells()],
    )
