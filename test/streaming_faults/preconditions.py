"""
test/streaming_faults/preconditions.py -- sources as production runs them
(issue #10): each precondition a CDC replica needs is a clear error in the
status view naming the fix, checked on a throwaway MariaDB with other
settings; binlog_checksum NONE streams correctly (every change compared with
the source's own sequence); a row image that is not FULL is a notice, not an
error.  Registered into faults.py's cases:

  precondition/binlog-format   STATEMENT and MIXED: error naming
                               binlog_format=ROW; streams once it is ROW
  precondition/log-bin-off     --skip-log-bin: error naming log_bin
  precondition/privileges      accounts without REPLICATION SLAVE, without
                               BINLOG MONITOR (REPLICATION CLIENT), without
                               SELECT (needed when binlog_row_metadata is not
                               FULL; not needed with FULL): errors with the
                               GRANT to run
  precondition/server-id       the source's own server_id; two sources with
                               one server_id (the source disconnects one:
                               the error names the server_id and the fix)
  precondition/row-image       MINIMAL: streaming, status binlog_row_image
                               and source_notice, a LOG line, no error
  checksum-none                --binlog-checksum=NONE: a workload through
                               get/ack equals the source's sequence

Instance: MariaDB "faults-pre" (BLF_FAULTS_PRE_PORT, 3417), destroyed by
each case.
"""

import os
import time

from blfaults import (RUN, CaseFailure, MariaDB, create_source, log, require, short, start_source,
                      stop_source, wait_for)

PRE_PORT = int(os.environ.get('BLF_FAULTS_PRE_PORT', '3417'))
PRE = MariaDB('faults-pre', PRE_PORT)
PW = 'pre-Pass1'


def fresh(extra=None):
    try:
        PRE._sh('start', '--fresh', extra=extra or [])
    except RuntimeError as e:
        path = os.path.join(RUN, 'mariadb-faults-pre-install.log')
        head = ''
        if os.path.exists(path):
            with open(path, errors='replace') as f:
                head = ''.join(f.readlines()[:25])
        log('starting faults-pre failed; install log:\n%s' % head)
        raise CaseFailure('could not start MariaDB faults-pre: %s' % short(str(e), 300))


def source_error(pg, name, must, timeout=30):
    """Start the source: its status must reach state error (or a last_error)
    whose text contains every string of must; returns the status."""
    pg.execute('SELECT binlog_fdw.start(%s)', (name,))

    def bad():
        s = pg.status(name) or {}
        e = s.get('last_error') or ''
        return s if e and all(m in e for m in must) else None
    try:
        s = wait_for(bad, timeout, 'source %s to fail with %s' % (name, must))
    except CaseFailure:
        raise CaseFailure('source %s: status %s, expected an error with %s'
                          % (name, short(pg.status(name), 900), must))
    log('%s: %s -> %s' % (name, s['state'], short(s['last_error'], 400)))
    require(s['state'] in ('error', 'reconnecting', 'connecting'),
            'source %s: state %s with error %s' % (name, s['state'], short(s['last_error'])))
    stop_source(pg, name)
    return s


def new_source(pg, name, server_id, user=None):
    create_source(pg, name, PRE_PORT, server_id, include='^pre\\.')
    if user:
        pg.execute("ALTER USER MAPPING FOR postgres SERVER %s OPTIONS (SET user '%s', SET password '%s')"
                   % (name, user, PW))


def account(name, privs):
    PRE.query("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'" % (name, PW))
    PRE.query("CREATE USER '%s'@'localhost' IDENTIFIED BY '%s'" % (name, PW))
    PRE.query("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'" % (name, PW))
    for host in ('%', 'localhost', '127.0.0.1'):
        PRE.query("GRANT %s ON *.* TO '%s'@'%s'" % (privs, name, host))


def register(case, pg, run_class):
    @case('precondition/binlog-format')
    def binlog_format(seed):
        fresh()
        try:
            for fmt in ('STATEMENT', 'MIXED'):
                PRE.query("SET GLOBAL binlog_format = '%s'" % fmt)
                new_source(pg, 'pre_fmt', 9701)
                source_error(pg, 'pre_fmt', ['binlog_format is %s' % fmt, 'binlog_format=ROW'])
            PRE.query("SET GLOBAL binlog_format = 'ROW'")
            new_source(pg, 'pre_fmt', 9701)
            start_source(pg, 'pre_fmt')
            stop_source(pg, 'pre_fmt')
        finally:
            PRE.destroy()

    @case('precondition/log-bin-off')
    def log_bin_off(seed):
        fresh(['--skip-log-bin'])
        try:
            require(PRE.query('SELECT @@global.log_bin')[0][0] == 0, 'log_bin is on')
            new_source(pg, 'pre_nolog', 9702)
            source_error(pg, 'pre_nolog', ['binary logging is disabled', 'log_bin', '--log-bin'])
        finally:
            PRE.destroy()

    @case('precondition/privileges')
    def privileges(seed):
        fresh()
        try:
            account('blf_noslave', 'BINLOG MONITOR, SELECT')
            account('blf_noclient', 'REPLICATION SLAVE, SELECT')
            account('blf_nosel', 'REPLICATION SLAVE, BINLOG MONITOR')
            new_source(pg, 'pre_noslave', 9703, 'blf_noslave')
            source_error(pg, 'pre_noslave', ['"blf_noslave"', 'lacks the REPLICATION SLAVE privilege',
                                             'GRANT REPLICATION SLAVE'])
            new_source(pg, 'pre_noclient', 9704, 'blf_noclient')
            source_error(pg, 'pre_noclient', ['"blf_noclient"', 'lacks the BINLOG MONITOR privilege',
                                              'GRANT BINLOG MONITOR'])
            # SELECT: needed for column names from information_schema only
            new_source(pg, 'pre_nosel', 9705, 'blf_nosel')
            start_source(pg, 'pre_nosel')
            stop_source(pg, 'pre_nosel')
            PRE.query("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
            new_source(pg, 'pre_nosel', 9705, 'blf_nosel')
            source_error(pg, 'pre_nosel', ['"blf_nosel"', 'lacks the SELECT privilege',
                                           'binlog_row_metadata is MINIMAL', 'GRANT SELECT ON',
                                           'binlog_row_metadata=FULL'])
        finally:
            PRE.destroy()

    @case('precondition/server-id')
    def server_id(seed):
        fresh()
        try:
            own = int(PRE.query('SELECT @@server_id')[0][0])
            new_source(pg, 'pre_own', own)
            source_error(pg, 'pre_own', ['server_id %d is the source\'s own server_id' % own,
                                         'choose a server_id'])
            # two replicas with one server_id: the source drops one of them
            new_source(pg, 'pre_a', 9711)
            new_source(pg, 'pre_b', 9711)
            start_source(pg, 'pre_a')
            pg.execute("SELECT binlog_fdw.start('pre_b')")

            def clash():
                for n in ('pre_a', 'pre_b'):
                    e = (pg.status(n) or {}).get('last_error') or ''
                    if 'same server_uuid/server_id' in e and 'server_id 9711' in e and \
                            "ALTER SERVER %s OPTIONS (SET server_id" % n in e:
                        return n, e
                return None
            n, e = wait_for(clash, 30, 'a server_id clash in the status view')
            log('server_id clash: %s: %s' % (n, short(e, 400)))
        finally:
            for n in ('pre_own', 'pre_a', 'pre_b'):
                stop_source(pg, n)
            PRE.destroy()

    @case('precondition/row-image')
    def row_image(seed):
        fresh()
        try:
            PRE.query("SET GLOBAL binlog_row_image = 'MINIMAL'")
            new_source(pg, 'pre_img', 9721)
            start_source(pg, 'pre_img')
            s = pg.status('pre_img')
            require(s['state'] == 'streaming' and s['last_error'] is None,
                    'row image MINIMAL: status %s' % short(s, 600))
            require(s['binlog_row_image'] == 'MINIMAL', 'binlog_row_image %r' % s['binlog_row_image'])
            require((s['source_notice'] or '').startswith('binlog_row_image is MINIMAL'),
                    'source_notice %r' % s['source_notice'])
            wait_for(lambda: pg.log_contains('source "pre_img": binlog_row_image is MINIMAL'), 10,
                     'the row image notice in the server log')
            stop_source(pg, 'pre_img')
        finally:
            PRE.destroy()

    @case('checksum-none')
    def checksum_none(seed):
        fresh(['--binlog-checksum=NONE'])
        try:
            require(PRE.query('SELECT @@global.binlog_checksum')[0][0] == 'NONE', 'checksum is not NONE')
            run = run_class('checksum-none', seed, 9731, mdb=PRE,
                            consumer_kw=dict(max_changes=300, timeout_ms=300))
            run.writer.run(ntxns=400)
            run.writer.close()
            time.sleep(0.5)
            run.finish()
        finally:
            PRE.destroy()
