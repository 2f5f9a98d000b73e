"""test/mysql_live/source.py -- instances of the MySQL test source
(test/mysql_source/server.js) for the MySQL cases: a config per instance
(sample files, version, users, TLS, schema, held transactions), start and
wait until it listens, its JSON-lines log, signals (reveal held
transactions, kill connections), stop; and TLS certificates made with
openssl at test time."""

import json
import os
import signal
import subprocess
import time

ROOT = os.environ.get('BLF_ROOT') or os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SAMPLES = os.path.abspath(os.path.join(ROOT, '..', 'shared', 'binlog-samples'))
SERVER_JS = os.path.join(ROOT, 'test', 'mysql_source', 'server.js')
RUST = os.path.join(SAMPLES, 'rust_mysql_common', 'test-data', 'binlogs')
JAVA = os.path.join(SAMPLES, 'mysql-binlog-connector-java', 'src', 'test', 'resources')

REPL_GRANTS = ['REPLICATION SLAVE', 'REPLICATION CLIENT']


def sample(name):
    for d in (RUST, JAVA):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError('binlog sample %s not found under %s' % (name, SAMPLES))


def default_users():
    return [
        # SELECT: column names of MINIMAL-metadata samples come from information_schema
        {'user': 'repl', 'host': '%', 'password': 'sha2-secret', 'plugin': 'caching_sha2_password',
         'grants': list(REPL_GRANTS) + ['SELECT']},
        {'user': 'native', 'host': '%', 'password': 'native-secret', 'plugin': 'mysql_native_password',
         'grants': list(REPL_GRANTS)},
        {'user': 'noslave', 'host': '%', 'password': 'pw', 'plugin': 'caching_sha2_password',
         'grants': ['REPLICATION CLIENT']},
        {'user': 'noclient', 'host': '%', 'password': 'pw', 'plugin': 'caching_sha2_password',
         'grants': ['REPLICATION SLAVE']},
    ]


class Source:
    """One test source process."""

    def __init__(self, workdir, name, files, version='8.0.40', **config):
        self.dir = os.path.join(workdir, 'src-' + name)
        os.makedirs(self.dir, exist_ok=True)
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        self.name = name
        self.log_path = os.path.join(self.dir, 'log.jsonl')
        self.ready_path = os.path.join(self.dir, 'ready.json')
        self.config = {
            'port': 0, 'host': '127.0.0.1', 'version': version,
            'files': [sample(f) if not os.path.isabs(f) else f for f in files],
            'data_dir': self.dir, 'users': default_users(),
            'log': self.log_path, 'ready_file': self.ready_path,
        }
        self.config.update(config)
        self.proc = None
        self.port = None

    def start(self, timeout=20):
        cfg = os.path.join(self.dir, 'config.json')
        with open(cfg, 'w') as f:
            json.dump(self.config, f, indent=1)
        out = open(os.path.join(self.dir, 'server.out'), 'w')
        self.proc = subprocess.Popen(['node', SERVER_JS, cfg], stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.ready_path):
            if self.proc.poll() is not None:
                raise RuntimeError('test source %s exited (%s): %s' % (
                    self.name, self.proc.returncode, open(os.path.join(self.dir, 'server.out')).read()[-2000:]))
            if time.monotonic() > deadline:
                raise RuntimeError('test source %s did not listen within %ss' % (self.name, timeout))
            time.sleep(0.05)
        with open(self.ready_path) as f:
            self.ready = json.load(f)
        self.port = self.ready['port']
        self.files = self.ready['files']
        return self

    def entries(self, event=None):
        out = []
        try:
            with open(self.log_path) as f:
                for line in f:
                    if line.strip():
                        e = json.loads(line)
                        if event is None or e.get('event') == event:
                            out.append(e)
        except FileNotFoundError:
            pass
        return out

    def queries(self):
        return [e['sql'] for e in self.entries('query')]

    def reveal(self, all_=False):
        self.proc.send_signal(signal.SIGHUP if all_ else signal.SIGUSR2)

    def kill_connections(self):
        self.proc.send_signal(signal.SIGUSR1)

    def restart(self, files=None, timeout=20):
        """Stop and start again on the same port (a source restart as its
        replicas see it), with other binlog files if given."""
        self.stop()
        if os.path.exists(self.ready_path):
            os.unlink(self.ready_path)
        self.config['port'] = self.port
        if files is not None:
            self.config['files'] = [sample(f) if not os.path.isabs(f) else f for f in files]
        return self.start(timeout)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None


def make_certs(d):
    """A CA, and a server certificate it signed for 127.0.0.1/localhost;
    a second CA that signed nothing (for the wrong-CA case)."""
    os.makedirs(d, exist_ok=True)

    def ossl(*args):
        subprocess.run(['openssl'] + list(args), check=True, cwd=d,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    ossl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=blf test CA',
         '-keyout', 'ca.key', '-out', 'ca.pem')
    ossl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=other CA',
         '-keyout', 'other-ca.key', '-out', 'other-ca.pem')
    ossl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost',
         '-keyout', 'server.key', '-out', 'server.csr')
    with open(os.path.join(d, 'san.cnf'), 'w') as f:
        f.write('subjectAltName=IP:127.0.0.1,DNS:localhost\n')
    ossl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
         '-days', '2', '-extfile', 'san.cnf', '-out', 'server.pem')
    return {'ca': os.path.join(d, 'ca.pem'), 'other_ca': os.path.join(d, 'other-ca.pem'),
            'cert': os.path.join(d, 'server.pem'), 'key': os.path.join(d, 'server.key')}
