"""What to do about each bottleneck (diagnose's advice, the job and training alerts' runbooks):
the words only, so that the dashboard generator reads them from a pure module."""

from __future__ import annotations

ADVICE = {
    "disk": "cache the dataset in memory or on a faster local disk, raise the loader's prefetch "
    "(DataLoader prefetch_factor, tf.data prefetch), pack many small files into fewer large "
    "ones (WebDataset, TFRecord, Arrow), or move the data to faster storage",
    "input_cpu": "add loader workers (num_workers, num_parallel_calls=AUTOTUNE), make the "
    "transforms cheaper or run them on the accelerator, cache decoded samples",
    "compute": "the input keeps up: profile the step itself (mixed precision, batch size, "
    "kernels); faster storage will not make this job faster",
    "checkpoint": "checkpoint less often, save asynchronously (a background thread, "
    "torch.distributed.checkpoint's async_save), or write to a fast local volume and copy it "
    "off afterwards",
    "throttled": "raise or remove the cgroup's I/O limit (io.max, blkio.throttle.*, systemd "
    "IOReadBandwidthMax=, the pod's limits), or read less (cache, compress)",
    "remote_fs": "stage the dataset on a local disk before training, enlarge the client's cache "
    "and read-ahead (NFS rsize, the FUSE store's cache options), read fewer, larger objects",
    "idle": "the job neither computes nor waits on files: look at what it waits for (another "
    "rank, the network, a lock) or whether it is paused",
    "unknown": "watch longer, and as root (or with CAP_SYS_PTRACE) so that blocked calls and "
    "open files can be read",
}
