"""WebGPU programs as plain data: what the kernel reading (``topos.compiler.kernels``) writes.

- ``views``: strided views of device buffers (broadcasts and transposes without copies);
- ``launch``: launches as data, and the builders that fill each kernel's parameters;
- ``program``: buffers and steps (uploads, launches, readbacks, host steps) as data;
- ``patterns``: the fused groups (softmax, log-softmax, layer norm, mean) a plan holds.

Nothing here touches a GPU, so every reading prints where wgpu-py is absent
(Pyodide included); ``topos.webgpu`` runs these programs and imports them from
here, never the other way round.
"""
