#!/usr/bin/python3
"""Scale, simulated: N `tune` workers on one PostgreSQL study (issue 13, section 5; issue 27).

Starts a throwaway PostgreSQL server (initdb as the `postgres` user when root, loopback, a
socket folder of its own, fsync off) and, with --pgbouncer, a PgBouncer in front of it in
transaction pooling mode (Debian's, as the `postgres` user: --pool-size server connections for
all the workers), then for each worker count runs that many `tune` processes at once on one
fresh study whose trial is trivial (bench_trivial_trial behind a `sh` that notes the launch time,
after sleeping --sleep seconds when given: with 5 s the machine's cores are not the limit), and
prints per worker count:

  trials/s     finished trials of the whole study per second of its wall time
  ask->launch  p50/p99 from the trial's start in storage (the server's clock when the worker
               claimed it: create or pop) to the trial command's first instruction
  conns        the most connections the server held for the study's database (sampled; behind
               PgBouncer, its pool)
  lock waits   sessions of the study waiting on a lock, mean over the samples
  server       the server's CPU time per trial (postmaster and its backends)
  xacts, rows  transactions and rows read (pg_stat_database) per trial; "steady": rows read
               per trial once the study holds two trials per worker (every worker has opened it:
               a worker's first sync reads the whole study once), and that per worker: every
               worker reads each trial of the others (its params, values, attributes) when it
               appears and when it changes, so the rows per trial of the whole study grow with the
               workers while what one worker reads per trial should not
  RSS          the mean resident memory of a worker (tune, sampled while its trials run)
  check        every trial number distinct and 0..N-1, none lost, none left RUNNING

With --overhead it also runs bench_harness_overhead with the default SQLite file and with this
server, for the trial round trip of each storage. Not a test: figures depend on the machine.

  bench/cluster/scale.py --build build [--workers 10,25,50] [--trials-per-worker 8] [--overhead]
  bench/cluster/scale.py --build build --pgbouncer --sleep 5 --workers 10,50,100,200 \
      --trials-per-worker 4      # issue 27's table (README)
"""
import argparse, os, pwd, resource, shutil, signal, socket, statistics, subprocess, sys, tempfile, threading, time

import psycopg2


def pg_bin():
    versions = sorted(os.listdir('/usr/lib/postgresql'), key=lambda v: int(v))
    return os.path.join('/usr/lib/postgresql', versions[-1], 'bin')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix='tune-pg-bench-')
        os.chmod(self.dir, 0o755)
        self.as_postgres = []
        if os.geteuid() == 0:
            pw = pwd.getpwnam('postgres')
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self.as_postgres = ['runuser', '-u', 'postgres', '--']
        self.data = os.path.join(self.dir, 'data')
        self.tool('initdb', '-D', self.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8',
                  '--no-sync')
        self.port = free_port()
        with open(os.path.join(self.data, 'postgresql.auto.conf'), 'w') as conf:
            conf.write(f"listen_addresses = '127.0.0.1'\nport = {self.port}\n"
                       f"unix_socket_directories = '{self.dir}'\nfsync = off\n"
                       "max_connections = 300\n")
        self.tool('pg_ctl', '-D', self.data, '-l', os.path.join(self.dir, 'log'), '-w', 'start')

    def tool(self, name, *args):
        subprocess.run(self.as_postgres + [os.path.join(pg_bin(), name), *args], check=True,
                       stdout=subprocess.DEVNULL)

    def cpu_seconds(self):
        """CPU time of the postmaster and every backend it has reaped (closed connections)."""
        with open(os.path.join(self.data, 'postmaster.pid')) as f:
            pid = int(f.readline())
        with open(f'/proc/{pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
        return sum(int(x) for x in fields[11:15]) / os.sysconf('SC_CLK_TCK')

    def url(self, db):
        return f'postgresql://postgres@127.0.0.1:{self.port}/{db}'

    def connect(self, db='postgres'):
        conn = psycopg2.connect(host='127.0.0.1', port=self.port, user='postgres', dbname=db)
        conn.autocommit = True
        return conn

    def create_db(self, db):
        conn = self.connect()  # not `with`: psycopg2 2.9 would open a transaction block
        conn.cursor().execute(f'CREATE DATABASE {db}')
        conn.close()

    def stop(self):
        self.tool('pg_ctl', '-D', self.data, '-m', 'fast', '-w', 'stop')
        shutil.rmtree(self.dir, ignore_errors=True)


class Bouncer:
    """Debian's PgBouncer in transaction pooling mode in front of `server`, stopped by pid."""

    def __init__(self, server, pool_size):
        self.dir = tempfile.mkdtemp(prefix='tune-pgbouncer-bench-')
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        ini = os.path.join(self.dir, 'pgbouncer.ini')
        with open(ini, 'w') as f:
            f.write(f"[databases]\n* = host=127.0.0.1 port={server.port} user=postgres\n"
                    f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {self.port}\n"
                    "unix_socket_dir =\nauth_type = any\npool_mode = transaction\n"
                    f"default_pool_size = {pool_size}\nmax_client_conn = 2000\n"
                    "server_login_retry = 1\n"
                    f"logfile = {self.dir}/pgbouncer.log\npidfile = {self.dir}/pgbouncer.pid\n")
        preexec = None
        if os.geteuid() == 0:
            pw = pwd.getpwnam('postgres')
            for path in (self.dir, ini):
                os.chown(path, pw.pw_uid, pw.pw_gid)

            def preexec():
                # Enough descriptors for every worker's connection, then the postgres user.
                resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
                os.setgid(pw.pw_gid)
                os.setuid(pw.pw_uid)
        self.proc = subprocess.Popen(['/usr/sbin/pgbouncer', ini], preexec_fn=preexec,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(('127.0.0.1', self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError('pgbouncer did not start: see ' + self.dir)

    def url(self, db):
        return f'postgresql://postgres@127.0.0.1:{self.port}/{db}'

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def rss_mb(pid):
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def run_workers(server, build, work, workers, per_worker, sampler, bouncer=None, sleep=0.0,
                verbose=False, probes=True):
    db = f'scale{workers}{sampler}'
    server.create_db(db)
    out = os.path.join(work, db)
    os.makedirs(out)
    study = os.path.join(out, 'study.yaml')
    trivial = os.path.join(build, 'bin', 'bench_trivial_trial')
    # The launch instant, written by the trial's first process; values travel as arguments.
    script = 'date +%s.%N > "$1/launched"; ' + (f'sleep {sleep}; ' if sleep else '') + \
        'exec "$0" --out "$1" --value "$2"'
    storage = bouncer.url(db) if bouncer else server.url(db)
    with open(study, 'w') as f:
        f.write(f"name: scale\noutput: {out}\nstorage: {storage}\n"
                f"command: [/bin/sh, -c, '{script}', '{trivial}', '{{trial_dir}}', '{{x}}']\n"
                f"sampler: {{type: {sampler}, seed: 1{', constant_liar: true' if sampler == 'tpe' else ''}}}\n"
                "params:\n  x: {type: float, low: 0, high: 10}\n"
                "  threads: {type: int, low: 1, high: 16}\n  bind: [none, core, socket]\n"
                + ("" if probes else "probes: {enabled: false}\n"))
    peak = [0]
    waits = []  # sessions of the study waiting on a lock, per sample
    rss = []  # workers' resident memory, MB, per sample
    done = threading.Event()
    procs = []

    steady = []  # (trials, xacts, rows read) once every worker has claimed a trial

    def watch():
        conn = server.connect()
        cur = conn.cursor()
        study_conn = None
        samples = 0
        while not done.is_set():
            if not steady:
                # Once the study has a trial per worker, every worker has opened it (its first
                # sync reads the whole study, and recovers what looks stale): from then on, what
                # a trial costs in steady state.
                try:
                    study_conn = study_conn or server.connect(db)
                    c = study_conn.cursor()
                    c.execute('SELECT count(*) FROM trials')
                    (n,) = c.fetchone()
                    if n >= 2 * workers:
                        c.execute('SELECT xact_commit + xact_rollback, tup_returned + tup_fetched '
                                  'FROM pg_stat_database WHERE datname = %s', (db,))
                        steady.append((n, *c.fetchone()))
                except psycopg2.Error:
                    pass  # the schema is not there yet
            cur.execute("SELECT count(*), count(*) FILTER (WHERE wait_event_type = 'Lock') "
                        'FROM pg_stat_activity WHERE datname = %s', (db,))
            conns, locked = cur.fetchone()
            peak[0] = max(peak[0], conns)
            waits.append(locked)
            samples += 1
            if samples % 20 == 0:
                rss.extend(m for m in (rss_mb(p.pid) for p in list(procs)) if m)
            time.sleep(0.05)
        conn.close()
        if study_conn:
            study_conn.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    tune = os.path.join(build, 'bin', 'tune')
    server_cpu0 = server.cpu_seconds()
    t0 = time.time()
    for w in range(workers):
        procs.append(subprocess.Popen([tune, '--quiet', '--trials', str(per_worker), study],
                                      stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(out, f'w{w}.err'), 'w')))
    codes = [p.wait() for p in procs]
    wall = time.time() - t0
    server_cpu = server.cpu_seconds() - server_cpu0
    done.set()
    watcher.join()
    conn = server.connect(db)
    cur = conn.cursor()
    # Naive UTC timestamps, read as UTC.
    cur.execute("SELECT number, state::text, "
                "EXTRACT(EPOCH FROM datetime_start AT TIME ZONE 'UTC'), "
                "EXTRACT(EPOCH FROM datetime_complete AT TIME ZONE 'UTC') FROM trials "
                "ORDER BY number")
    rows = cur.fetchall()
    cur.execute('SELECT xact_commit + xact_rollback, tup_returned + tup_fetched '
                'FROM pg_stat_database WHERE datname = %s', (db,))
    xacts, tuples = cur.fetchone()
    # Where the rows were read: sequential scans (rows) and index scans (rows fetched) per table.
    cur.execute('SELECT relname, seq_tup_read, idx_tup_fetch FROM pg_stat_user_tables '
                'ORDER BY seq_tup_read + idx_tup_fetch DESC LIMIT 4')
    scans = cur.fetchall()
    conn.close()
    numbers = [r[0] for r in rows]
    expected = workers * per_worker
    problems = []
    if numbers != list(range(expected)):
        problems.append(f'numbers are not 0..{expected - 1} once each')
    if any(r[1] == 'RUNNING' for r in rows):
        problems.append(f'{sum(r[1] == "RUNNING" for r in rows)} trials left RUNNING')
    if any(r[1] != 'COMPLETE' for r in rows):
        problems.append(f'{sum(r[1] != "COMPLETE" for r in rows)} trials not COMPLETE')
    latencies = []
    for number, _, start, _ in rows:
        try:
            with open(os.path.join(out, 'trials', str(number), 'launched')) as f:
                latencies.append((float(f.read()) - float(start)) * 1e3)
        except OSError:
            problems.append(f'trial {number} left no launch time')
    span = float(max(r[3] for r in rows)) - float(min(r[2] for r in rows))
    lat = sorted(latencies)
    p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))] if lat else float('nan')
    failed = [c for c in codes if c != 0]
    if failed:
        problems.append(f'{len(failed)} workers failed (see {out}/w*.err)')
    ok = not problems
    steady_rows = float('nan')
    if steady and len(rows) > steady[0][0]:
        steady_rows = (tuples - steady[0][2]) / (len(rows) - steady[0][0])
    print(f'{workers:7d} {len(rows):7d} {len(rows) / span:9.1f} '
          f'{statistics.median(lat) if lat else float("nan"):9.1f} '
          f'{p99:9.1f} {peak[0]:6d} {statistics.mean(waits or [0]):6.2f} '
          f'{server_cpu / len(rows) * 1e3:7.1f} {xacts / len(rows):6.0f} {tuples / len(rows):8.0f} '
          f'{steady_rows:8.0f} {steady_rows / workers:7.1f} '
          f'{statistics.mean(rss) if rss else float("nan"):6.1f} {wall:7.1f}  '
          f'{"ok" if ok else "FAILED: " + "; ".join(problems)}',
          flush=True)
    if verbose:
        print('        rows read per trial by table (sequential/index): ' + ', '.join(
            f'{t} {s / len(rows):.0f}/{i / len(rows):.0f}' for t, s, i in scans), flush=True)
    return ok


def overhead(server, build, trials, reps):
    bench = os.path.join(build, 'bin', 'bench_harness_overhead')
    server.create_db('overhead')
    for name, extra in (('SQLite (default file)', []),
                        ('PostgreSQL (loopback, fsync off)', ['--storage', server.url('overhead')])):
        print(f'\n{name}:', flush=True)
        subprocess.run([bench, '--trials', str(trials), '--reps', str(reps), '--probes', 'off',
                        *extra], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--build', default='build')
    ap.add_argument('--workers', default='10,25,50')
    ap.add_argument('--trials-per-worker', type=int, default=8)
    ap.add_argument('--sampler', default='tpe', choices=['tpe', 'random'])
    ap.add_argument('--pgbouncer', action='store_true',
                    help='workers connect through PgBouncer in transaction pooling mode')
    ap.add_argument('--pool-size', type=int, default=20,
                    help="PgBouncer's server connections for the study's database")
    ap.add_argument('--sleep', type=float, default=0.0, help='seconds each trial sleeps')
    ap.add_argument('--tables', action='store_true', help='where the rows were read, per table')
    ap.add_argument('--no-probes', action='store_true',
                    help="probes: {enabled: false}: no worker samples its trial's processes (on a "
                         "cluster each node's monitor has its node's cores; here all share two)")
    ap.add_argument('--overhead', action='store_true')
    ap.add_argument('--overhead-trials', type=int, default=200)
    ap.add_argument('--overhead-reps', type=int, default=3)
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    server = Server()
    bouncer = Bouncer(server, args.pool_size) if args.pgbouncer else None
    work = tempfile.mkdtemp(prefix='tune-scale-')
    ok = True
    try:
        with open('/proc/loadavg') as f:
            load = f.read().split()[0]
        print(f'{args.trials_per_worker} trials per worker'
              f'{f" sleeping {args.sleep:g} s" if args.sleep else ""}, sampler {args.sampler}, '
              f'probes {"off" if args.no_probes else "on"}, '
              f'one study, server on 127.0.0.1:{server.port}'
              f'{f", through PgBouncer (transaction pooling, {args.pool_size} server connections)" if bouncer else ""}'
              f'; load average {load} at start')
        print('workers  trials  trials/s  p50 ms    p99 ms    conns  lock   server   xacts  rows    '
              ' rows    per       RSS   wall s  check')
        print('         (study) (study)   ask->launch         (peak) waits  ms CPU  /trial  read/trial'
              ' steady  worker  MB/w')
        for n in (int(x) for x in args.workers.split(',')):
            ok = run_workers(server, args.build, work, n, args.trials_per_worker, args.sampler,
                             bouncer, args.sleep, args.tables, not args.no_probes) and ok
        with open('/proc/loadavg') as f:
            print(f'load average {f.read().split()[0]} at the end')
        if args.overhead:
            overhead(server, args.build, args.overhead_trials, args.overhead_reps)
    finally:
        if bouncer:
            bouncer.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True) if ok else print("kept", work)
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
