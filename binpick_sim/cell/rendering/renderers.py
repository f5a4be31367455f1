"""Which renderer draws the camera images: TinyRenderer, PyBullet's EGL plugin, or the GUI's OpenGL.

`simulation.renderer` is one of RENDERERS. `tiny` is PyBullet's software rasteriser in DIRECT mode
(the reference simulator's cpu-headless); `egl` loads PyBullet's `eglRendererPlugin` into the DIRECT client and
renders with OpenGL through EGL, on a GPU or on Mesa's llvmpipe (the reference simulator's gpu-headless); `gui`
renders with the OpenGL of the GUI window (gpu-gui); `auto` picks by AUTO_RULE.

The plugin ends the whole process (`exit(1)`) when EGL cannot start, so `egl` is first tried in a
short child process (`probe_egl`), which also reports the GL vendor and renderer strings; a failure
becomes one clear RendererError at start-up. Facts measured with PyBullet 3.2.7 that shape this module:
- the plugin's offscreen window is EGL_MAX_SIZE; a request up to that size renders at exactly its
  size, a larger one is rendered at the window size and upsampled row by row (the `--width/--height`
  connect options did not change the window in DIRECT mode), so `egl` refuses larger frames; the GUI
  renders into its window the same way (OpenGLGuiHelper::copyCameraImageData: the source is at most
  the window's size, then rescaled), so `gui` refuses frames larger than the window it opens, GUI_MAX_SIZE;
- two clients with the plugin in one process crash (SIGSEGV) when either disconnects, so one world
  per process may use `egl` at a time (`auto` then falls back to TinyRenderer).
"""
from __future__ import annotations

import functools
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pybullet

RENDERERS = ("auto", "tiny", "egl", "gui")
EGL_MAX_SIZE = (1024, 768)  # the plugin's offscreen window (START_WIDTH x START_HEIGHT in PyBullet 3.2.7)
GUI_MAX_SIZE = (1024, 768)  # the GUI window PyBullet opens (its default size; a smaller window upsamples more)
# auto: EGL (where it loads) for frames of at least this many pixels, TinyRenderer below. Measured on
# this 2-core machine, EGL on Mesa llvmpipe (bench/camera.py, doc/cameras.md "Renderers"): Camera.render frames/s
# tiny / egl 39 / 31 at 64x64, 37 / 33 at 160x120, 23 / 28 at 320x240, 8.9 / 15.9 at 640x480.
AUTO_EGL_MIN_PIXELS = 320 * 240
AUTO_RULE = (f"with the GUI open, gui when every frame is at most {GUI_MAX_SIZE[0]}x{GUI_MAX_SIZE[1]}; "
             f"headless, egl when EGL loads, every frame is at least {AUTO_EGL_MIN_PIXELS} pixels and at most "
             f"{EGL_MAX_SIZE[0]}x{EGL_MAX_SIZE[1]}, and no other world of this process uses egl; otherwise tiny")
PROBE_TIMEOUT = 120.0  # seconds; loading the plugin takes about a second on a busy machine

_PROBE = """
import ctypes, pkgutil, pybullet
client = pybullet.connect(pybullet.DIRECT)
plugin = pybullet.loadPlugin(pkgutil.get_loader("eglRenderer").get_filename(), "_eglRendererPlugin",
                             physicsClientId=client)
print("plugin =", plugin, flush=True)
if plugin >= 0:  # the depth buffer's bits: those of the EGL config the plugin's context was made with
    pybullet.getCameraImage(1, 1, renderer=pybullet.ER_BULLET_HARDWARE_OPENGL, physicsClientId=client)
    egl, P = ctypes.CDLL("libEGL.so.1"), ctypes.c_void_p
    egl.eglGetCurrentDisplay.restype = egl.eglGetCurrentContext.restype = P
    display, context = P(egl.eglGetCurrentDisplay()), P(egl.eglGetCurrentContext())
    config_id, config, count, bits = ctypes.c_int(), P(), ctypes.c_int(), ctypes.c_int()
    egl.eglQueryContext(display, context, 0x3028, ctypes.byref(config_id))  # EGL_CONFIG_ID
    wanted = (ctypes.c_int * 3)(0x3028, config_id.value, 0x3038)  # EGL_NONE
    if egl.eglChooseConfig(display, wanted, ctypes.byref(config), 1, ctypes.byref(count)) and count.value:
        if egl.eglGetConfigAttrib(display, config, 0x3025, ctypes.byref(bits)):  # EGL_DEPTH_SIZE
            print("Depth bits =", bits.value, flush=True)
"""


class RendererError(ValueError):
    """The requested renderer cannot run here; the message says why and what to use instead."""


class EglContext:
    """The plugin's EGL context, handed from thread to thread.

    An OpenGL context is current on one thread at a time, and the plugin makes it current on the thread
    that loads it. PyBullet calls GL from whichever thread calls the client (rendering, but also loading
    a body's visual shapes), and on a thread where the context is not current those calls do nothing:
    a frame rendered there silently repeats the last one (measured), and the very first one crashes. So
    the thread that is about to use the client claims the context (`claim`), after the thread that had
    it let it go (`release`); the physics loop does this when it starts and stops.
    """

    EGL_DRAW, EGL_READ = 0x3059, 0x305A

    def __init__(self):
        import ctypes

        egl = ctypes.CDLL("libEGL.so.1")  # the library the plugin loaded: the same handles
        for name in ("eglGetCurrentDisplay", "eglGetCurrentContext", "eglGetCurrentSurface"):
            getattr(egl, name).restype = ctypes.c_void_p
        egl.eglGetCurrentSurface.argtypes = [ctypes.c_int]
        egl.eglMakeCurrent.argtypes = [ctypes.c_void_p] * 4
        egl.eglMakeCurrent.restype = ctypes.c_uint
        self.egl = egl
        self.display, self.context = egl.eglGetCurrentDisplay(), egl.eglGetCurrentContext()
        self.draw = egl.eglGetCurrentSurface(self.EGL_DRAW)
        self.read = egl.eglGetCurrentSurface(self.EGL_READ)
        if not (self.display and self.context):
            raise RendererError("renderer egl: the plugin left no current EGL context; use renderer tiny")

    def claim(self) -> None:
        """Make the context current on this thread (no-op where it already is)."""
        if self.egl.eglGetCurrentContext() != self.context:
            if not self.egl.eglMakeCurrent(self.display, self.draw, self.read, self.context):
                raise RendererError("renderer egl: the EGL context is still current on another thread")

    def release(self) -> None:
        """Let another thread claim the context (no-op where this thread does not hold it)."""
        if self.egl.eglGetCurrentContext() == self.context:
            self.egl.eglMakeCurrent(self.display, None, None, None)


@dataclass(frozen=True)
class Renderer:
    name: str  # tiny, egl or gui (never auto)
    flag: int  # PyBullet's renderer argument of getCameraImage
    gl: str = ""  # the GL vendor, renderer and version strings ("" for TinyRenderer)
    context: EglContext | None = None  # egl only

    def claim(self) -> None:
        """This thread is about to use the client (see EglContext); nothing to do but for egl."""
        if self.context is not None:
            self.context.claim()

    def release(self) -> None:
        if self.context is not None:
            self.context.release()

    @property
    def opengl(self) -> bool:
        """OpenGL's pixel convention (egl, gui) rather than TinyRenderer's (see Camera.intrinsics)."""
        return self.name != "tiny"

    def describe(self) -> str:
        return f"{self.name} ({self.gl})" if self.gl else f"{self.name} (PyBullet TinyRenderer, CPU)"


TINY = Renderer("tiny", pybullet.ER_TINY_RENDERER)
GUI = Renderer("gui", pybullet.ER_BULLET_HARDWARE_OPENGL, "the GUI window's OpenGL")
_egl_lock = threading.Lock()
_egl_owner: object | None = None  # the one client of this process with the EGL plugin loaded


@functools.cache
def probe_egl() -> str:
    """The GL vendor / renderer / version of EGL here and its depth buffer's bits, or RendererError (once
    per process)."""
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise RendererError(f"renderer egl: loading PyBullet's EGL plugin took over {PROBE_TIMEOUT:g} s; "
                            "use renderer tiny") from None
    lines = done.stdout.splitlines()
    fields = dict(line.split(" = ", 1) for line in lines if " = " in line)
    plugin = fields.get("plugin", "-1").strip()
    if done.returncode != 0 or not plugin.lstrip("-").isdigit() or int(plugin) < 0:
        said = next((line for line in lines + done.stderr.splitlines() if "EGL" in line and "choice" not in line),
                    f"exit status {done.returncode}")
        raise RendererError(f"renderer egl: PyBullet's EGL plugin cannot start here ({said.strip()}; it needs "
                            "libEGL and an EGL device, e.g. Debian's libegl1 and libgl1-mesa-dri, or the "
                            "NVIDIA driver); use renderer tiny or auto")
    strings = [f"{key} {fields[key].strip()}" for key in ("Vendor", "Renderer", "Version") if key in fields]
    if fields.get("Depth bits", "").strip().isdigit():  # what depth's precision follows (camera.py)
        strings.append(f"depth buffer {fields['Depth bits'].strip()} bit")
    return ", ".join(strings)


def upsampling_problem(renderer: str, sizes: list[tuple[int, int]]) -> str | None:
    """Why `renderer` cannot draw frames of these sizes without upsampling them, or None."""
    if renderer not in ("egl", "gui"):
        return None  # TinyRenderer draws any size as asked
    (max_w, max_h), window = ((EGL_MAX_SIZE, "PyBullet's EGL window") if renderer == "egl" else
                              (GUI_MAX_SIZE, "the GUI window PyBullet opens, which it renders into"))
    too_big = [f"{w}x{h}" for w, h in sizes if w > max_w or h > max_h]
    if too_big:
        return (f"renderer {renderer}: frames up to {max_w}x{max_h} only ({window}; larger ones would be "
                f"upsampled), got {', '.join(too_big)}; use renderer tiny for them")
    return None


def choose(requested: str, gui: bool, sizes: list[tuple[int, int]]) -> str:
    """The renderer `requested` means here: `auto` resolved by AUTO_RULE; `egl` and `gui` checked
    (RendererError)."""
    if requested not in RENDERERS:
        raise RendererError(f"renderer: expected one of {list(RENDERERS)}, got {requested!r}")
    if requested == "auto":
        if gui:
            return "tiny" if upsampling_problem("gui", sizes) else "gui"
        if upsampling_problem("egl", sizes) or _egl_owner is not None or min(w * h for w, h in sizes) < AUTO_EGL_MIN_PIXELS:
            return "tiny"
        try:
            probe_egl()
        except RendererError:
            return "tiny"
        return "egl"
    problem = upsampling_problem(requested, sizes)
    if problem:
        raise RendererError(problem)
    if requested == "egl":
        if _egl_owner is not None:
            raise RendererError("renderer egl: another world of this process already renders with EGL, and "
                                "PyBullet's EGL plugin crashes with two; close it first or use renderer tiny")
        probe_egl()
    return requested


_spellings: dict[str, dict] = {}  # directory -> {key: its spelling's number}
_spellings_lock = threading.Lock()


def spelled(path, key) -> str:
    """`path` spelled so that each `key` (hashable) has a spelling of its own in this process (the first
    key seen: the path as given); the file is the same. Load an object's URDF through
    `spelled(urdf, ("scale", scale))`; a spawned URDF's meshes are written `spelled(mesh, ("spawn", file))`.

    PyBullet's EGL plugin keeps each mesh it has converted for drawing by its file name and frame, not by
    its scale (`m_cachedVisualShapes` in eglRendererVisualShapeConverter.cpp, PyBullet 3.2.7): a mesh loaded
    again at another size (the same random_urdfs object in a later episode, or one cube at 3 and 5 cm) is
    drawn at the size it had first, even after that body is gone (measured here: both cubes drawn the same
    size, TinyRenderer right). A directory spelled differently ('./' and './/' inserted, one per bit of the
    spelling's number) is a file name the plugin has not seen, so it converts the mesh again at its size."""
    path = Path(path)
    with _spellings_lock:
        known = _spellings.setdefault(str(path.parent), {})
        number = known.setdefault(key, len(known))
    if number == 0:
        return str(path)
    return f"{path.parent}/" + "".join(".//" if bit == "1" else "./" for bit in f"{number:b}") + path.name


def offscreen(name: str) -> str:
    """The renderer a process of its own (a render worker) uses for a world that renders with `name`
    (tiny, egl or gui): the same, but for `gui`, whose window belongs to the live process: `egl`, OpenGL
    too, where it loads, else `tiny`."""
    if name != "gui":
        return name
    try:
        probe_egl()
    except RendererError:
        return "tiny"
    return "egl"


def attach(client, name: str) -> Renderer:
    """Set `client` up to render with `name` (tiny, egl or gui); egl loads the plugin into it."""
    global _egl_owner
    if name == "tiny":
        return TINY
    if name == "gui":
        return GUI
    gl = probe_egl()
    import pkgutil

    from ..pybullet_stdout import quiet_stdout

    with _egl_lock:
        if _egl_owner is not None:
            raise RendererError("renderer egl: another world of this process already renders with EGL")
        with quiet_stdout():  # the plugin prints its GL strings (probe_egl has them), and more at a first frame
            plugin = client.loadPlugin(pkgutil.get_loader("eglRenderer").get_filename(), "_eglRendererPlugin")
            if plugin >= 0:
                client.getCameraImage(1, 1, renderer=pybullet.ER_BULLET_HARDWARE_OPENGL)
        if plugin < 0:
            raise RendererError("renderer egl: PyBullet's EGL plugin did not load; use renderer tiny")
        context = EglContext()
        _egl_owner = client
    return Renderer("egl", pybullet.ER_BULLET_HARDWARE_OPENGL, gl, context)


def detach(client) -> bool:
    """The client is closing: another world of this process may use egl again. True if it had EGL."""
    global _egl_owner
    with _egl_lock:
        if _egl_owner is client:
            _egl_owner = None
            return True
    return False
