"""Tags from well-known cgroup layouts (Kubernetes, Docker, systemd): pure and table-driven.

Layouts, as documented by Kubernetes ("About cgroup v2", "Configuring a cgroup driver"),
Docker ("Runtime metrics": /sys/fs/cgroup/.../docker/<id> or system.slice/docker-<id>.scope)
and systemd (systemd.slice(5)):

    kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope
    kubepods.slice/kubepods-pod<uid_>.slice/crio-<id>.scope          (guaranteed: no QoS slice)
    kubepods/besteffort/pod<uid>/<id>                                (cgroupfs driver)
    system.slice/docker-<id>.scope, docker/<id>, system.slice/<unit>.service
"""

from __future__ import annotations

import re
from typing import Mapping

_ID = r"[0-9a-f]{12,64}"
_QOS = r"(?P<qos>burstable|besteffort)"
_END = r"(?:/|$)"
_SCOPE_PREFIX = r"(?:cri-containerd|crio|docker|containerd)"

# (pattern searched in the path without its leading "/", tags added when it matched);
# the first matching row wins, so the most specific rows come first.
RULES: tuple[tuple[re.Pattern[str], Mapping[str, str]], ...] = (
    (  # systemd driver: the pod slice names the QoS class, guaranteed pods have none
        re.compile(
            rf"(?:^|/)kubepods(?:-{_QOS})?-pod(?P<pod_uid>[0-9a-f_]+)\.slice"
            rf"(?:/{_SCOPE_PREFIX}-(?P<container_id>{_ID})\.scope)?{_END}"
        ),
        {"qos": "guaranteed"},
    ),
    (  # cgroupfs driver
        re.compile(
            rf"(?:^|/)kubepods/(?:{_QOS}/)?pod(?P<pod_uid>[0-9a-f-]+)"
            rf"(?:/(?P<container_id>{_ID}))?{_END}"
        ),
        {"qos": "guaranteed"},
    ),
    (re.compile(rf"(?:^|/)kubepods-{_QOS}\.slice{_END}"), {}),
    (re.compile(rf"(?:^|/)kubepods/{_QOS}{_END}"), {}),
    (re.compile(rf"(?:^|/)docker-(?P<container_id>{_ID})\.scope{_END}"), {}),
    (re.compile(rf"(?:^|/)docker/(?P<container_id>{_ID}){_END}"), {}),
    (re.compile(rf"^system\.slice/(?P<unit>[^/]+\.service){_END}"), {}),
)


def cgroup_path_tag(relative: str) -> str:
    """The `cgroup` tag: the path as /proc/<pid>/cgroup shows it ("/" is the root)."""
    return "/" + relative.strip("/")


def cgroup_tags(relative: str) -> dict[str, str]:
    """Tags for one cgroup: always `cgroup`, plus pod_uid/container_id/qos/unit when known."""
    path = relative.strip("/")
    tags = {"cgroup": cgroup_path_tag(path)}
    for pattern, defaults in RULES:
        match = pattern.search(path)
        if match is None:
            continue
        found = {key: value for key, value in match.groupdict().items() if value}
        if "pod_uid" in found:
            found["pod_uid"] = found["pod_uid"].replace("_", "-")
            found.setdefault("qos", defaults.get("qos", ""))
        tags.update({key: value for key, value in found.items() if value})
        break
    return tags
