"""The native device: WebGPU through wgpu-py (the optional ``topos-autodiff[wgpu]`` extra).

wgpu-py finds an adapter on any Vulkan, Metal or D3D12 driver, including software ones
such as lavapipe (Debian's mesa-vulkan-drivers). Its queue reads buffers synchronously.
"""

from .device_interface import Adapter, NoAdapterError


def request_wgpu_device():
    """A ``WgpuDevice`` on the first adapter wgpu-py finds; raises ``NoAdapterError`` without one."""
    try:
        import wgpu
    except ImportError as error:
        raise NoAdapterError(
            f"wgpu-py is not installed ({error}); pip install 'topos-autodiff[wgpu]'", reason="no-wgpu"
        ) from None
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        raise NoAdapterError(
            "wgpu-py found no WebGPU adapter (install a driver, e.g. Debian's mesa-vulkan-drivers)", reason="no-adapter"
        )
    return WgpuDevice(adapter.request_device_sync(), adapter.info)


class WgpuDevice:
    """``topos.webgpu.device.Device`` over a wgpu-py ``GPUDevice``."""

    def __init__(self, device, info):
        import wgpu

        self._wgpu = wgpu
        self._device = device
        name = f"{info.get('device', '?')} ({info.get('backend_type', '?')}, {info.get('adapter_type', '?')})"
        # wgpu-py reports no fallback adapter; a CPU adapter is a software one.
        self.adapter = Adapter(name, software=info.get("adapter_type") == "CPU", fallback=False)

    def create_buffer(self, label, size, uniform=False):
        usage = self._wgpu.BufferUsage
        flags = usage.UNIFORM | usage.COPY_DST if uniform else usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        return self._device.create_buffer(label=label, size=size, usage=flags)

    def write_buffer(self, buffer, offset, data):
        self._device.queue.write_buffer(buffer, offset, data)

    def create_pipeline(self, label, code, entry, bindings):
        module = self._device.create_shader_module(label=label, code=code)
        stage = self._wgpu.ShaderStage.COMPUTE
        layout = self._device.create_bind_group_layout(
            entries=[{"binding": index, "visibility": stage, "buffer": {"type": kind}} for index, kind in bindings]
        )
        pipeline = self._device.create_compute_pipeline(
            label=f"{label}:{entry}",
            layout=self._device.create_pipeline_layout(bind_group_layouts=[layout]),
            compute={"module": module, "entry_point": entry},
        )
        return pipeline, layout

    def create_bind_group(self, layout, entries):
        resources = [
            {"binding": index, "resource": {"buffer": buffer, "offset": offset, "size": size}}
            for index, buffer, offset, size in entries
        ]
        return self._device.create_bind_group(layout=layout, entries=resources)

    def submit(self, dispatches):
        encoder = self._device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        for pipeline, group, workgroups in dispatches:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups(*workgroups)
        compute.end()
        self._device.queue.submit([encoder.finish()])

    def wait(self):
        # wgpu-py 0.32's queue.on_submitted_work_done_sync is broken; polling the device with
        # wait=True blocks until the submitted work has run.
        self._device._poll_wait()

    def read_buffer(self, buffer, offset, size):
        import numpy as np

        return np.frombuffer(self._device.queue.read_buffer(buffer, offset, size), dtype=np.uint8)
