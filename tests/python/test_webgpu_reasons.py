"""Why the page's kernels run on numpy, in a word: ``NoAdapterError.reason`` for each case the
browser device tells apart (no JSPI, Python entered synchronously, no ``navigator.gpu``, no adapter),
and ``topos.playground``'s status, which hands the reason to the page's status bar.

The browser device runs in Pyodide; here it meets stand-ins for Pyodide's ``js`` and
``pyodide.ffi`` modules that play each browser.
"""

import json
import sys
import types

import pytest

from topos import playground
from topos.webgpu import NoAdapterError
from topos.webgpu import device as device_module
from topos.webgpu.browser_device import request_browser_device


def fake_browser(monkeypatch, *, jspi=True, suspending=True, gpu=True, adapter=None):
    """Stand-ins for Pyodide's modules: a browser with or without JSPI, ``navigator.gpu``, an adapter."""

    class Gpu:
        def requestAdapter(self, options):  # noqa: N802  (WebGPU's name)
            return adapter

    webassembly = types.SimpleNamespace(**({"Suspending": object} if suspending else {}))
    navigator = types.SimpleNamespace(**({"gpu": Gpu()} if gpu else {}))
    js = types.ModuleType("js")
    js.WebAssembly, js.navigator, js.Object = webassembly, navigator, types.SimpleNamespace(fromEntries=dict)
    ffi = types.ModuleType("pyodide.ffi")
    ffi.can_run_sync = lambda: jspi
    ffi.run_sync = lambda promise: promise
    ffi.to_js = lambda fields, dict_converter=None: fields
    package = types.ModuleType("pyodide")
    package.ffi = ffi
    monkeypatch.setitem(sys.modules, "js", js)
    monkeypatch.setitem(sys.modules, "pyodide", package)
    monkeypatch.setitem(sys.modules, "pyodide.ffi", ffi)


@pytest.mark.parametrize(
    ("browser", "reason", "message"),
    [
        ({"jspi": False, "suspending": False}, "no-jspi", "this browser lacks JavaScript Promise Integration (JSPI)"),
        ({"jspi": False, "suspending": True}, "synchronous-entry", "it was entered synchronously from JavaScript"),
        ({"gpu": False}, "no-webgpu", "this browser has no WebGPU (navigator.gpu)"),
        ({"adapter": None}, "no-adapter", "WebGPU found no adapter"),
    ],
)
def test_the_browser_device_names_why_there_is_none(monkeypatch, browser, reason, message):
    fake_browser(monkeypatch, **browser)
    with pytest.raises(NoAdapterError) as raised:
        request_browser_device()
    assert raised.value.reason == reason
    assert message in str(raised.value)


def test_the_page_status_carries_the_reason(monkeypatch):
    fake_browser(monkeypatch, gpu=False)

    monkeypatch.setattr(device_module, "device", request_browser_device)
    assert json.loads(playground.status_json()) == {
        "available": False,
        "fallback": False,
        "reason": "no-webgpu",
        "detail": "this browser has no WebGPU (navigator.gpu)",
    }


def test_a_fallback_adapter_is_named_as_the_reason_auto_runs_numpy(monkeypatch):
    class Device:
        adapter = device_module.Adapter("SwiftShader", software=True, fallback=True)

    monkeypatch.setattr(device_module, "device", lambda: Device())
    status = json.loads(playground.status_json())
    assert status == {
        "available": True,
        "fallback": True,
        "reason": "fallback",
        "detail": "SwiftShader (software fallback)",
    }


def test_a_device_that_fails_to_start_says_so(monkeypatch):
    def broken():
        raise OSError("the driver crashed")

    monkeypatch.setattr(device_module, "_request", broken)
    monkeypatch.setattr(device_module, "_device", None)
    monkeypatch.setattr(device_module, "_failure", None)
    with pytest.raises(NoAdapterError) as raised:
        device_module.device()
    assert raised.value.reason == "failed"
    assert str(raised.value) == "the WebGPU adapter failed to start: the driver crashed"
