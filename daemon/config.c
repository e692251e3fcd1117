/* config.c — option table, config file reader and command-line parser. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/gpualloc.h"

typedef enum opt_kind { OPT_STRING, OPT_INT, OPT_LONG, OPT_BOOL } opt_kind;

typedef struct opt_def {
    const char *name;
    opt_kind kind;
    size_t offset;
    size_t size;     /* strings: buffer size */
    long min, max;   /* numbers */
    const char *arg;
    const char *help;
} opt_def;

#define STR(field, arg, help) {#field, OPT_STRING, offsetof(config, field), sizeof(((config *)0)->field), 0, 0, arg, help}
#define NUM(field, kind, lo, hi, arg, help) {#field, kind, offsetof(config, field), 0, lo, hi, arg, help}

/* Flag names use dashes where fields use underscores. */
static const opt_def opts[] = {
    STR(listen, "HOST:PORT", "address to serve on (default 127.0.0.1:8080; port 0: any free port)"),
    STR(data_dir, "DIR", "queue database and run directories; created if missing (default ./punchcard-data)"),
    STR(secrets, "FILE", "secrets file: [{\"secret\"|\"secret_sha256\", \"identity\", \"role\"}] (default ./secrets.json)"),
    STR(datasets, "DIR[:DIR...]", "roots that dataset names resolve under (default /usr/share/datasets)"),
    NUM(slots, OPT_INT, 0, 1 << 20, "N", "MPI ranks the local host runs at once, without --hostfile (default: cores)"),
    STR(hostfile, "FILE", "hosts jobs are placed on, \"HOST slots=N\" lines (default: local host only)"),
    NUM(gpus, OPT_INT, 0, GPUALLOC_MAX, "N", "GPUs on each host, scheduled like slots (default 0: no GPU jobs)"),
    STR(engine, "PATH", "punch-train binary (default: ../engine/punch-train, then punch-train, next to punchcardd; then PATH)"),
    STR(mpirun, "PATH", "mpirun binary (default: mpirun from PATH)"),
    STR(engine_env, "\"NAME=VALUE ...\"", "environment for mpirun and the ranks only (e.g. OMP_NUM_THREADS=1)"),
    STR(mpirun_args, "\"ARGS\"", "appended to every mpirun command (e.g. \"--mca btl_tcp_if_include eth1\")"),
    STR(host_probe, "\"CMD\"", "command that succeeds when down host %h answers (default: the rsh agent or ssh, %h true)"),
    NUM(host_probe_interval_s, OPT_INT, 1, 86400, "SECONDS", "how often a down host is probed (default 30)"),
    NUM(max_running, OPT_INT, 0, INT_MAX, "N", "running jobs per user, 0 = no limit (default 1)"),
    NUM(max_queued, OPT_INT, 0, INT_MAX, "N", "queued jobs per user before 429, 0 = no limit (default 100)"),
    NUM(max_body, OPT_LONG, 1024, 1L << 30, "BYTES", "largest request body (default 1048576)"),
    NUM(http_threads, OPT_INT, 1, 256, "N", "HTTP worker threads (default 4)"),
    NUM(connection_timeout, OPT_INT, 1, 3600, "SECONDS", "idle connection timeout (default 30)"),
    NUM(connection_limit, OPT_INT, 1, 1 << 20, "N", "concurrent connections (default 1024)"),
    NUM(per_ip_limit, OPT_INT, 0, 1 << 20, "N", "concurrent connections per client IP, 0 = no limit (default 128)"),
    NUM(header_timeout, OPT_INT, 1, 3600, "SECONDS", "time to send a request's whole header, and to start the next one on a kept-alive connection (default 30)"),
    NUM(body_timeout, OPT_INT, 1, 86400, "SECONDS", "time to send a request's whole body (default 60)"),
    STR(tls_cert, "FILE", "serve HTTPS with this PEM certificate (chain), with --tls-key (default: plain HTTP)"),
    STR(tls_key, "FILE", "the PEM private key of --tls-cert (keep it 0600)"),
    STR(tls_client_ca, "FILE", "mutual TLS: serve only clients with a certificate from this PEM CA (default: none)"),
    STR(metrics_auth, "public|admin", "who may read /metrics: anyone, or admins only (default public)"),
    NUM(kill_grace, OPT_INT, 0, 3600, "SECONDS", "SIGTERM to SIGKILL delay on cancel/time limit (default 10)"),
    NUM(tick_ms, OPT_INT, 10, 60000, "MS", "supervision and scheduling period (default 250)"),
    STR(scheduler, "local|slurm", "who places jobs: punchcardd on its hosts, or Slurm through sbatch (default local)"),
    STR(slurm_bin_dir, "DIR", "directory of sbatch, squeue, scancel and scontrol (default: PATH)"),
    STR(slurm_partition, "NAME", "sbatch --partition for every job (default: Slurm's default)"),
    STR(slurm_account, "NAME", "sbatch --account for every job (default: the user's default)"),
    STR(slurm_qos, "NAME", "sbatch --qos for every job (default: Slurm's default)"),
    STR(slurm_args, "\"ARGS\"", "appended to every sbatch command (e.g. \"--requeue --constraint=ib\")"),
    NUM(upload_max, OPT_LONG, 1024, LONG_MAX, "BYTES", "largest dataset upload, 413 above (default 2147483648: 2 GiB)"),
    NUM(upload_quota, OPT_LONG, 1024, LONG_MAX, "BYTES", "uploaded datasets per user, 507 above (default 10737418240: 10 GiB)"),
    NUM(predict_max, OPT_LONG, 1024, 1L << 34, "BYTES", "largest input of POST /api/v1/jobs/ID/predict, 413 above (default 67108864: 64 MiB)"),
    NUM(generate_max_tokens, OPT_LONG, 1, 1L << 20, "N", "most tokens one POST /api/v1/jobs/ID/generate may ask for, 400 above (default 512)"),
    NUM(generate_max_prompt, OPT_LONG, 1, 1L << 20, "BYTES", "longest prompt of POST /api/v1/jobs/ID/generate, 400 above (default 4096)"),
    NUM(predict_threads, OPT_INT, 1, 64, "N", "predictions and generations run at once, apart from the HTTP threads (default 4)"),
    NUM(predict_queue, OPT_INT, 0, 1024, "N", "predictions and generations waiting for a thread; 503 with Retry-After beyond (default 16)"),
    NUM(predict_per_user, OPT_INT, 1, 1024, "N", "one caller's predictions and generations running or waiting; 429 with Retry-After beyond (default 2)"),
    NUM(host_memory_mb, OPT_LONG, 0, 1L << 40, "MIB", "memory of each host that jobs may use, for admission and limits (default 0: MemTotal less a tenth, at least 1 GiB)"),
    NUM(job_output_quota_mb, OPT_LONG, 0, 1L << 40, "MIB", "disk a job's run directory may fill; past it the job is stopped and fails, 0 = no limit (default 10240)"),
    NUM(user_quota_mb, OPT_LONG, 0, 1L << 40, "MIB", "disk a user's run directories may fill together; over it a submit gets 507, 0 = no limit (default 51200)"),
    NUM(disk_min_free_pct, OPT_INT, 0, 100, "PCT", "/healthz reports degraded when the data dir's file system has less free (default 5)"),
    NUM(disk_reserve_mb, OPT_LONG, 0, 1L << 40, "MIB", "free space of the data dir's file system that jobs keep for others: a job writing checkpoints or weights below it is stopped and fails (default: 5% of the file system or 1024, whichever is smaller)"),
    STR(run_as, "USER", "unprivileged account jobs run as (needs punchcardd started as root; default: punchcardd's own)"),
    NUM(allow_root_jobs, OPT_BOOL, 0, 1, NULL, "started as root without --run-as: run jobs as root anyway (refused otherwise)"),
    NUM(max_time_limit_s, OPT_LONG, 0, 1L << 40, "SECONDS", "longest time limit a job may ask for; a job asking none gets it; 0 = no maximum (default 604800: 7 days)"),
    NUM(hold, OPT_BOOL, 0, 1, NULL, "accept and queue jobs but start none (maintenance)"),
    NUM(retention_days, OPT_INT, 0, 36500, "DAYS", "forget finished jobs (rows, events, run directories) DAYS after they ended, 0 = keep them (default 0)"),
    NUM(retention_keep_records, OPT_BOOL, 0, 1, NULL, "retention removes only old jobs' run directories and keeps their records (default false: it forgets them)"),
    NUM(verbose, OPT_BOOL, 0, 1, NULL, "log debug lines too"),
    NUM(preempt_grace, OPT_INT, 0, 86400, "SECONDS", "a queued job blocked by lower-priority running jobs waits this long before they are preempted (default 30)"),
    NUM(preempt_allow_opt_out, OPT_BOOL, 0, 1, NULL, "honour resources.preemptible: false (default true; false: any job with a checkpoint may be preempted)"),
    NUM(stall_grace, OPT_INT, 0, 1 << 24, "SECONDS", "a running job that reports no progress for max(this, stall_factor x its slowest step) is stalled; 0 = never (default 3600)"),
    NUM(stall_factor, OPT_INT, 1, 1000, "K", "a stall is also more than K times the job's slowest step so far (default 10)"),
    NUM(host_loss_retries, OPT_INT, 0, 100, "N", "times a job that lost a host is queued again by itself (default 2)"),
};
#define N_OPTS (sizeof opts / sizeof opts[0])

bool config_metrics_admin(const config *c)
{
    return strcmp(c->metrics_auth, "admin") == 0;
}

bool config_slurm(const config *c)
{
    return strcmp(c->scheduler, "slurm") == 0;
}

void config_usage(FILE *out)
{
    fprintf(out,
            "usage: punchcardd [--config FILE] [OPTIONS]\n"
            "\n"
            "Punchcard's job server: authenticated REST API, durable SQLite queue, fair\n"
            "scheduler, supervised mpirun/punch-train runs that survive restarts.\n"
            "\n"
            "  --config FILE          read settings from FILE (\"key = value\"; keys are the\n"
            "                         option names below with - or _); flags override it\n");
    for (size_t i = 0; i < N_OPTS; i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", opts[i].name);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        char left[96];
        snprintf(left, sizeof left, "%s%s%s", flag, opts[i].arg ? " " : "",
                 opts[i].arg ? opts[i].arg : "");
        fprintf(out, "  %-22s %s\n", left, opts[i].help);
    }
    fprintf(out,
            "  --help                 this text\n"
            "  --version              print the version\n"
            "\n"
            "Signals: SIGTERM/SIGINT stop serving and exit (running jobs keep running under\n"
            "their supervisors and are re-adopted on restart); SIGHUP reloads the secrets.\n");
}

/* The option called `name` ("max-body" or "max_body"), or NULL. */
static const opt_def *config_find(const char *name, size_t len)
{
    for (size_t i = 0; i < N_OPTS; i++) {
        const char *o = opts[i].name;
        if (strlen(o) != len)
            continue;
        size_t k = 0;
        while (k < len && (name[k] == o[k] || (name[k] == '-' && o[k] == '_')))
            k++;
        if (k == len)
            return &opts[i];
    }
    return NULL;
}

static bool config_set(config *c, const opt_def *o, const char *value, const char *where,
                       char *err, size_t errlen)
{
    char *base = (char *)c + o->offset;
    if (o->kind == OPT_STRING) {
        if (strlen(value) >= o->size) {
            snprintf(err, errlen, "%s: %s: value too long", where, o->name);
            return false;
        }
        memcpy(base, value, strlen(value) + 1);
        return true;
    }
    if (o->kind == OPT_BOOL) {
        bool v;
        if (!strcmp(value, "true") || !strcmp(value, "yes") || !strcmp(value, "1"))
            v = true;
        else if (!strcmp(value, "false") || !strcmp(value, "no") || !strcmp(value, "0"))
            v = false;
        else {
            snprintf(err, errlen, "%s: %s: expected true or false, got \"%.40s\"", where, o->name,
                     value);
            return false;
        }
        *(bool *)base = v;
        return true;
    }
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < o->min || v > o->max) {
        snprintf(err, errlen, "%s: %s: expected an integer in [%ld, %ld], got \"%.40s\"", where,
                 o->name, o->min, o->max, value);
        return false;
    }
    if (o->kind == OPT_INT)
        *(int *)base = (int)v;
    else
        *(long *)base = v;
    return true;
}

/* The built-in settings, as a config file would write them: set through
 * config_set like any other value, so each is checked against its option's
 * range. Options not named here start as zero, false or "". */
static const struct {
    const char *name, *value;
} config_default_values[] = {
    {"listen", "127.0.0.1:8080"},
    {"data_dir", "punchcard-data"},
    {"secrets", "secrets.json"},
    {"datasets", "/usr/share/datasets"},
    {"max_running", "1"},
    {"max_queued", "100"},
    {"max_body", "1048576"},
    {"upload_max", "2147483648"},
    {"upload_quota", "10737418240"},
    {"predict_max", "67108864"},
    {"generate_max_tokens", "512"},
    {"generate_max_prompt", "4096"},
    {"predict_threads", "4"},
    {"predict_queue", "16"},
    {"predict_per_user", "2"},
    {"http_threads", "4"},
    {"connection_timeout", "30"},
    {"connection_limit", "1024"},
    {"per_ip_limit", "128"},
    {"header_timeout", "30"},
    {"body_timeout", "60"},
    {"metrics_auth", "public"},
    {"kill_grace", "10"},
    {"tick_ms", "250"},
    {"host_probe_interval_s", "30"},
    {"job_output_quota_mb", "10240"},
    {"user_quota_mb", "51200"},
    {"disk_min_free_pct", "5"},
    {"max_time_limit_s", "604800"},
    {"scheduler", "local"},
    {"preempt_grace", "30"},
    {"preempt_allow_opt_out", "true"},
    {"stall_grace", "3600"},
    {"stall_factor", "10"},
    {"host_loss_retries", "2"},
};

void config_defaults(config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < sizeof config_default_values / sizeof config_default_values[0]; i++) {
        const char *name = config_default_values[i].name;
        const opt_def *o = config_find(name, strlen(name));
        char err[256];
        /* A default outside its option's range is a bug in the tables above,
         * caught by every test that starts a daemon. */
        if (!o || !config_set(c, o, config_default_values[i].value, "default", err, sizeof err))
            abort();
    }
    c->disk_reserve_mb = -1; /* below the option's range: quota_reserve_bytes' 5% or 1 GiB */
}

static char *config_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static bool config_load_file(config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--config %s: %s", path, strerror(errno));
        return false;
    }
    char line[8192];
    int lineno = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = config_trim(line);
        if (!*s)
            continue;
        char where[CONFIG_PATH_MAX + 32];
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        size_t klen = strcspn(s, "= \t");
        const opt_def *o = config_find(s, klen);
        if (!o) {
            snprintf(err, errlen, "%s: unknown setting \"%.*s\"", where, (int)(klen > 60 ? 60 : klen), s);
            ok = false;
            break;
        }
        char *v = s + klen;
        while (isspace((unsigned char)*v))
            v++;
        if (*v == '=')
            v = config_trim(v + 1);
        if (o->kind == OPT_BOOL && !*v)
            v = (char *)"true";
        ok = config_set(c, o, v, where, err, errlen);
    }
    fclose(f);
    return ok;
}

const char *config_installed_file(const char *self_exe, const char *installed_bindir,
                                  const char *installed_config)
{
    if (!self_exe || !installed_bindir || !installed_config)
        return NULL;
    const char *slash = strrchr(self_exe, '/');
    size_t n = strlen(installed_bindir);
    if (!slash || (size_t)(slash - self_exe) != n || strncmp(self_exe, installed_bindir, n) != 0)
        return NULL;
    return access(installed_config, R_OK) == 0 ? installed_config : NULL;
}

static bool config_names_file(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--config") || !strncmp(argv[i], "--config=", 9))
            return true;
    return false;
}

config_result config_parse(config *c, int argc, char **argv, const char *self_exe, char *err,
                           size_t errlen)
{
    config_defaults(c);
    /* PUNCH_INSTALL_*: set by daemon/meson.build from the install layout. */
    const char *installed = config_names_file(argc, argv) ? NULL
        : config_installed_file(self_exe, PUNCH_INSTALL_BINDIR, PUNCH_INSTALL_CONFIG);
    if (installed && !config_load_file(c, installed, err, errlen))
        return CONFIG_ERROR;
    /* The config file first, wherever --config appears, so flags win. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            config_usage(stdout);
            return CONFIG_EXIT;
        }
        if (!strcmp(a, "--version")) {
            printf("punchcardd 0.1.0\n");
            return CONFIG_EXIT;
        }
        const char *file = NULL;
        if (!strcmp(a, "--config")) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--config needs a FILE");
                return CONFIG_ERROR;
            }
            file = argv[++i];
        } else if (!strncmp(a, "--config=", 9)) {
            file = a + 9;
        }
        if (file && !config_load_file(c, file, err, errlen))
            return CONFIG_ERROR;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9))
            continue;
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument \"%.60s\" (see --help)", a);
            return CONFIG_ERROR;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const opt_def *o = config_find(name, nlen);
        if (!o) {
            snprintf(err, errlen, "unknown option \"%.60s\" (see --help)", a);
            return CONFIG_ERROR;
        }
        const char *value;
        if (eq)
            value = eq + 1;
        else if (o->kind == OPT_BOOL)
            value = "true";
        else if (i + 1 < argc)
            value = argv[++i];
        else {
            snprintf(err, errlen, "%s needs a value (see --help)", a);
            return CONFIG_ERROR;
        }
        if (!config_set(c, o, value, "command line", err, errlen))
            return CONFIG_ERROR;
    }
    if (strcmp(c->scheduler, "local") != 0 && !config_slurm(c)) {
        snprintf(err, errlen, "scheduler: expected local or slurm, got \"%.40s\"", c->scheduler);
        return CONFIG_ERROR;
    }
    if (strcmp(c->metrics_auth, "public") != 0 && !config_metrics_admin(c)) {
        snprintf(err, errlen, "metrics_auth: expected public or admin, got \"%.40s\"",
                 c->metrics_auth);
        return CONFIG_ERROR;
    }
    return CONFIG_OK;
}
