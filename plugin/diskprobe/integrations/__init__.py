"""Training-framework callbacks around diskprobe.guard.DiskGuard.

Each submodule imports its framework when it is itself imported; `import diskprobe` and
`import diskprobe.guard` import none. Install the framework with the matching extra:
`pip install diskprobe[keras]` or `pip install diskprobe[lightning]`.
"""
