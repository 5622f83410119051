"""Kubernetes pods on a budget_host.SyntheticHost: created, running, deleted and replaced.

Each pod is what the kubelet (systemd cgroup driver, containerd) leaves on a node: a pod slice
under kubepods.slice (by QoS class), one scope per container (the sandbox's pause container
too), the containers' processes, and the mounts: the service-account token (tmpfs), the
sandbox's shm (tmpfs), each container's overlay rootfs (all three ignored by diskprobe's
default ignore_fs), and for some pods a volume diskprobe does report: a CSI block PVC (an
rbdN device, staged at a globalmount and bind-mounted into the pod's volumes directory) or an
NFS PV. A pod ends after an exponentially distributed lifetime and a new one (new pod_uid,
container ids, PIDs, volumes) takes its place; its image pull runs `unpigz` under containerd.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fleet_host_types import MB, Mount, PodMix, Task

if TYPE_CHECKING:
    from budget_host import Proc, SyntheticHost

STEP_SEC = 10.0
RBD_MAJOR = 251
KUBELET = "/var/lib/kubelet"


@dataclass
class Pod:
    uid: str
    long: bool
    slice: str
    scopes: list[str] = field(default_factory=list)
    procs: list[Proc] = field(default_factory=list)
    mounts: list[str] = field(default_factory=list)
    rbd: str | None = None


class PodPlanner:
    def __init__(self, host: SyntheticHost, mix: PodMix) -> None:
        self.host, self.mix = host, mix
        self.rng = random.Random(host.rng.random())
        self.pods = [self._create(initial=True) for _ in range(mix.count)]

    def step(self) -> None:
        for index, pod in enumerate(self.pods):
            hours = self.mix.long_hours if pod.long else self.mix.short_hours
            if self.rng.random() < STEP_SEC / (hours * 3600):
                self._delete(pod)
                self.pods[index] = self._create(initial=False)
                self.host.events["pods_replaced"] += 1

    def replace_all(self) -> None:
        """Every pod replaced at once (the quick test's "pods were replaced" case)."""
        for index, pod in enumerate(self.pods):
            self._delete(pod)
            self.pods[index] = self._create(initial=False)
            self.host.events["pods_replaced"] += 1

    def _hex(self, digits: int) -> str:
        return f"{self.rng.getrandbits(digits * 4):0{digits}x}"

    def _create(self, initial: bool) -> Pod:
        mix, rng, host = self.mix, self.rng, self.host
        raw = self._hex(32)
        uid = f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"
        qos = rng.choices(("burstable", "besteffort", ""), (0.6, 0.1, 0.3))[0]
        unit = uid.replace("-", "_")
        slice_ = (f"/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{unit}.slice" if qos
                  else f"/kubepods.slice/kubepods-pod{unit}.slice")  # fmt: skip
        pod = Pod(uid, rng.random() < mix.long_share, slice_)
        host.cgroups.add(slice_)
        device = self._volumes(pod)
        sandbox = self._container(pod, [Task("pause", 65535, "")], device)
        host.mount(Mount(f"/run/containerd/io.containerd.grpc.v1.cri/sandboxes/{sandbox}/shm",
                         0, 90, "tmpfs", "shm"))  # fmt: skip
        pod.mounts.append(host.mounts[-1].path)
        name = rng.choice(mix.tail_names) if mix.tail_names and rng.random() < mix.tail_share \
            else rng.choice(mix.main_names)  # fmt: skip
        per_process = (30 if pod.long else 8) * MB * math.exp(rng.gauss(0, 0.5))
        main = Task(name, rng.choice(mix.uids), "", per_process, 0.02 * per_process, 0.02,
                    copies=1 + mix.workers)  # fmt: skip
        self._container(pod, [main], device)
        if rng.random() < mix.sidecar_share:
            side = Task(rng.choice(("fluent-bit", "envoy", "pilot-agent")), 1337, "", 20e3, 150e3)
            self._container(pod, [side], device)
        if not initial:  # the image pull: a burst of writes on containerd's disk
            host.spawn(host.profile.tools[0].task, rng.randint(*host.profile.tools[0].life))
        return pod

    def _container(self, pod: Pod, tasks: list[Task], device: tuple[int, int]) -> str:
        host, container = self.host, self._hex(64)
        scope = f"{pod.slice}/cri-containerd-{container}.scope"
        pod.scopes.append(scope)
        host.cgroups.add(scope)
        host.mount(Mount(f"/run/containerd/io.containerd.runtime.v2.task/k8s.io/{container}"
                         "/rootfs", 0, 91, "overlay", "overlay"))  # fmt: skip
        pod.mounts.append(host.mounts[-1].path)
        for task in tasks:
            placed = Task(task.name, task.uid, scope, task.read, task.write, task.wait)
            for _ in range(task.copies):
                pod.procs.append(host.spawn(placed, None, [device]))
        return container

    def _volumes(self, pod: Pod) -> tuple[int, int]:
        """Mount the pod's volumes; the device its containers read from."""
        host, rng, base = self.host, self.rng, f"{KUBELET}/pods/{pod.uid}/volumes"
        token = f"{base}/kubernetes.io~projected/kube-api-access-{self._hex(5)}"
        host.mount(Mount(token, 0, 92, "tmpfs", "tmpfs"))
        pod.mounts.append(token)
        local = [d for d in host.devnos if d.startswith("nvme") and d != "nvme0n1"]
        first = host.profile.disks[0].name
        device = host.devnos[rng.choice(local) if local else first]
        draw = rng.random()
        if draw < self.mix.pvc_share:
            index = next(i for i in range(4096) if f"rbd{i}" not in host.disks)
            pod.rbd, device = f"rbd{index}", (RBD_MAJOR, index * 16)
            host.disks[pod.rbd] = device
            host.add_block(pod.rbd, RBD_MAJOR, index * 16, None, None)
            pvc = f"pvc-{self._hex(8)}-{self._hex(4)}-{self._hex(4)}-{self._hex(4)}-{self._hex(12)}"
            for path in (f"{KUBELET}/plugins/kubernetes.io/csi/rbd.csi.ceph.com/{self._hex(64)}"
                         "/globalmount", f"{base}/kubernetes.io~csi/{pvc}/mount"):  # fmt: skip
                host.mount(Mount(path, RBD_MAJOR, index * 16, "ext4", f"/dev/{pod.rbd}"))
                pod.mounts.append(path)
        elif draw < self.mix.pvc_share + self.mix.nfs_share:
            export = rng.randrange(self.mix.nfs_exports)
            path = f"{base}/kubernetes.io~nfs/home-{export}"
            host.mount(Mount(path, 0, 70 + export, "nfs4", f"filer:/export/home-{export}"))
            pod.mounts.append(path)
        return device

    def _delete(self, pod: Pod) -> None:
        host = self.host
        for proc in pod.procs:
            if proc.pid in host.procs:
                host.reap(proc)
        for scope in reversed(pod.scopes):
            host.cgroups.remove(scope)
        host.cgroups.remove(pod.slice)
        for path in pod.mounts:
            host.mounts = [m for m in host.mounts if m.path != path]
        if pod.rbd is not None:
            del host.disks[pod.rbd]
