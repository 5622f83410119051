"""Text path (smartctl < 7.0, or JSON that failed): pySMART's parser on our exec layer.

Placeholder interface; the full implementation fills DriveHealth from pySMART's Device and,
where pySMART raises or lacks fields, from the text itself.
"""

from __future__ import annotations

from diskprobe.smart.devices import DriveSpec
from diskprobe.smart.reader import DriveRead
from diskprobe.smart.runner import CommandRunner


def read_text(spec: DriveSpec, runner: CommandRunner, nocheck: str) -> DriveRead:
    raise NotImplementedError("text path: see smart/text_path.py")
