"""Notebook kernels forked from a process that has already imported the libraries every notebook imports.

A notebook's kernel is a new Python process: before its first cell computes anything it spends seconds of processor
time importing ipykernel, numpy, pandas, scipy, scikit-learn and Altair (about 4 s here, 57 notebooks per check).
`Server` imports those once (`PRELOAD`, libraries only: never calibkit, whose modules the notebooks define and test)
and forks a kernel for each notebook from that state; `Manager`, the kernel manager `tools/nbcheck.py` gives nbclient,
launches `python tools/forkkernel.py -f CONNECTION_FILE` instead of `python -m ipykernel_launcher -f CONNECTION_FILE`.
That launcher asks the server for a kernel, forwards the signals it gets (interrupt, terminate) and exits with the
kernel's status; the server kills a kernel whose launcher went away. Without a server (or when it cannot be reached)
the launcher becomes an ordinary kernel (`exec`), so a notebook runs the same either way.

The forked kernel takes the launcher's working directory, environment and `sys.path[0]`; what the preloaded imports
read from the environment (thread counts, CPU-feature switches, PYTHONHASHSEED) is the server's, which is why the
server is started with the very environment the kernels get (`serving(env)`). That a forked kernel computes what an
ordinary one does is checked by tests/test_notebooks.py (`test_executing_twice_gives_identical_notebooks` runs a
notebook in both); all 57 notebooks, committed from ordinary kernels, matched in forked ones when this was written.
"""
import builtins, json, os, selectors, signal, socket, subprocess, sys, tempfile, time, types
from contextlib import contextmanager
from pathlib import Path

PRELOAD = ['ipykernel.kernelapp', 'numpy', 'pandas', 'scipy.stats', 'sklearn.base', 'sklearn.isotonic',
           'sklearn.linear_model', 'altair', 'fastcore.test']
SOCKET_ENV = 'CALIBKIT_KERNEL_FORKS'   # the server's socket, for the launchers
REAP_EVERY = 0.2                       # seconds between looks for kernels that ended


def _send(conn, obj): conn.sendall(json.dumps(obj).encode() + b'\n')


def _recv(f):
    line = f.readline()
    return json.loads(line) if line else None


class Server:
    "Imports `PRELOAD`, then forks a kernel per request on a Unix socket (one line of JSON: argv, cwd, env, path0)."
    def __init__(self, path: str):
        # imported as a kernel would: pandas shows 20 columns at most in a kernel, as many as fit in a terminal (it
        # asks `get_ipython()` once, at import)
        builtins.get_ipython = lambda: types.SimpleNamespace(kernel=None)
        try:
            for m in PRELOAD: __import__(m)
        finally: del builtins.get_ipython
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path); self.sock.listen(16)
        self.kernels = {}                  # pid -> the launcher's connection

    def serve(self):
        self.sel = sel = selectors.DefaultSelector()
        sel.register(self.sock, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select(REAP_EVERY):
                if key.fileobj is self.sock:
                    conn = self.sock.accept()[0]
                    req = _recv(conn.makefile('rb'))
                    if req is None: conn.close(); continue
                    pid = self.fork(req, conn)
                    self.kernels[pid] = conn
                    _send(conn, {'pid': pid})
                    sel.register(conn, selectors.EVENT_READ, pid)
                else:                      # the launcher closed its end (killed): its kernel goes too
                    sel.unregister(key.fileobj)
                    if key.data in self.kernels:
                        try: os.kill(key.data, signal.SIGKILL)
                        except ProcessLookupError: pass
            self.reap(sel)

    def reap(self, sel):
        while self.kernels:
            try: pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError: return
            if pid == 0: return
            conn = self.kernels.pop(pid, None)
            if conn is None: continue
            try: _send(conn, {'exit': os.waitstatus_to_exitcode(status)})
            except OSError: pass
            try: sel.unregister(conn)
            except KeyError: pass
            conn.close()

    def fork(self, req: dict, conn) -> int:
        pid = os.fork()
        if pid: return pid
        code = 1
        try:                               # the kernel: none of the server's sockets, the launcher's surroundings
            self.sel.close(); self.sock.close(); conn.close()
            for c in self.kernels.values(): c.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL); signal.signal(signal.SIGINT, signal.default_int_handler)
            os.chdir(req['cwd'])
            os.environ.clear(); os.environ.update(req['env'])
            sys.path[0], sys.argv = req['path0'], req['argv']
            from ipykernel import kernelapp
            kernelapp.launch_new_instance(argv=req['argv'][1:])
            code = 0
        except SystemExit as e: code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        finally: os._exit(code)


def launch(argv: list[str]):
    "The kernel command: a forked kernel when a server answers at `$CALIBKIT_KERNEL_FORKS`, else an ordinary one."
    path = os.environ.get(SOCKET_ENV)
    try:
        if not path: raise OSError
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); conn.connect(path)
    except OSError:
        os.execv(sys.executable, [sys.executable, '-m', 'ipykernel_launcher', *argv])
    f = conn.makefile('rb')
    _send(conn, dict(argv=['ipykernel_launcher', *argv], cwd=os.getcwd(), env=dict(os.environ), path0=os.getcwd()))
    pid = _recv(f)['pid']
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(s, lambda sig, _, pid=pid: os.kill(pid, sig))
    end = _recv(f)
    sys.exit(1 if end is None else end['exit'])


@contextmanager
def serving(env: dict):
    """A kernel server for the duration, started in `env` (the kernels' environment); yields `env` with the socket's
    path set for the launchers. `CALIBKIT_KERNEL_FORKS=off` in `env`: none (every kernel an ordinary one)."""
    if env.get(SOCKET_ENV) == 'off':
        yield env; return
    folder = tempfile.mkdtemp(prefix='calibkit-kernels-')
    path = os.path.join(folder, 'socket')
    proc = subprocess.Popen([sys.executable, __file__, 'serve', path], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=folder)
    try:
        while not os.path.exists(path) and proc.poll() is None: time.sleep(0.05)
        yield {**env, SOCKET_ENV: path} if proc.poll() is None else env
    finally:
        proc.terminate(); proc.wait()
        for p in Path(folder).iterdir(): p.unlink()
        os.rmdir(folder)


def manager_class():
    "nbclient's kernel manager with this file's launcher as the kernel command."
    from jupyter_client.manager import AsyncKernelManager

    class Manager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            if cmd[1:3] != ['-m', 'ipykernel_launcher']: return cmd
            return [cmd[0], __file__, *cmd[3:]]
    return Manager


if __name__ == '__main__':
    if sys.argv[1:2] == ['serve']:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        Server(sys.argv[2]).serve()
    else: launch(sys.argv[1:])
