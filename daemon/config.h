/* config.h — punchcardd's settings: defaults, then the config file
 * (--config FILE, "key = value" lines), then command-line flags. Every flag
 * has a config-file key of the same name (etc/punchcardd.conf documents
 * them). */
#ifndef PUNCH_CONFIG_H
#define PUNCH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CONFIG_PATH_MAX 1024

typedef struct config {
    char listen[128];              /* HOST:PORT; port 0 picks a free one */
    char data_dir[CONFIG_PATH_MAX];
    char secrets[CONFIG_PATH_MAX];
    char datasets[4 * CONFIG_PATH_MAX]; /* colon-separated roots */
    int slots;                     /* 0: the hostfile's slots, else online cores */
    char hostfile[CONFIG_PATH_MAX];
    int gpus;                      /* per host */
    char engine[CONFIG_PATH_MAX];  /* "": next to punchcardd, then PATH */
    char mpirun[CONFIG_PATH_MAX];
    char engine_env[CONFIG_PATH_MAX]; /* "NAME=VALUE ..." set for mpirun and ranks */
    char mpirun_args[CONFIG_PATH_MAX]; /* appended to every mpirun, split on whitespace */
    char host_probe[CONFIG_PATH_MAX];  /* command probing a down host (%h); "": default */
    int host_probe_interval_s;     /* seconds between probes of a down host */
    int max_running;               /* per user */
    int max_queued;                /* per user */
    long max_body;                 /* bytes */
    int http_threads;
    int connection_timeout;        /* seconds */
    int connection_limit;
    int per_ip_limit;              /* 0: no per-IP limit */
    int header_timeout;            /* seconds for a request's whole header */
    int body_timeout;              /* seconds for a request's whole body */
    char tls_cert[CONFIG_PATH_MAX];      /* PEM certificate chain; "": plain HTTP */
    char tls_key[CONFIG_PATH_MAX];       /* PEM private key of tls_cert */
    char tls_client_ca[CONFIG_PATH_MAX]; /* PEM CA of client certificates; "": none */
    char metrics_auth[16];         /* who may read /metrics: "public" or "admin" */
    int kill_grace;                /* seconds between SIGTERM and SIGKILL */
    int tick_ms;                   /* period of the supervision tick */
    char scheduler[16];            /* "local" or "slurm" */
    char slurm_bin_dir[CONFIG_PATH_MAX]; /* sbatch, squeue, scancel, scontrol; "": PATH */
    char slurm_partition[128];
    char slurm_account[128];
    char slurm_qos[128];
    char slurm_args[CONFIG_PATH_MAX];   /* appended to every sbatch, split on whitespace */
    long upload_max;               /* bytes of one dataset upload (413 above) */
    long upload_quota;             /* bytes of uploads per user (507 above) */
    long predict_max;              /* bytes of a predict request's input (413 above) */
    long generate_max_tokens;      /* max_new_tokens of a generate request (400 above) */
    long generate_max_prompt;      /* bytes of a generate request's prompt (400 above) */
    int predict_threads;           /* engine pool: predictions/generations at once */
    int predict_queue;             /* ... waiting for a thread (503 above) */
    int predict_per_user;          /* ... of one caller, running or waiting (429 above) */
    long host_memory_mb;           /* memory of a host for jobs; 0: MemTotal less headroom */
    long job_output_quota_mb;      /* a job's run directory; 0: no limit */
    long user_quota_mb;            /* all of a user's run directories; 0: no limit */
    int disk_min_free_pct;         /* /healthz degraded below this much free space */
    long disk_reserve_mb;          /* free space jobs may not write into; -1: default */
    long max_time_limit_s;         /* longest run a job may ask for (and gets if it asks none) */
    char run_as[64];               /* account jobs run as; "": punchcardd's own */
    bool allow_root_jobs;          /* as root without run_as: run jobs as root anyway */
    bool hold;                     /* accept jobs but start none */
    int retention_days;            /* forget finished jobs this long after they ended; 0: keep */
    bool retention_keep_records;   /* retention removes run directories only, keeps rows */
    bool verbose;
    int preempt_grace;             /* seconds a blocked job waits before preempting */
    bool preempt_allow_opt_out;    /* honour resources.preemptible: false */
    int stall_grace;               /* seconds without progress before a stall; 0: never */
    int stall_factor;              /* ... or more than this many slowest steps */
    int host_loss_retries;         /* automatic requeues after a lost host */
} config;

typedef enum config_result { CONFIG_OK, CONFIG_EXIT, CONFIG_ERROR } config_result;

void config_defaults(config *c);

/* Fill c from argv (and the config file it names). CONFIG_EXIT: --help or
 * --version was printed; CONFIG_ERROR: *err says what is wrong. Without
 * --config, an installed punchcardd (self_exe in the install's bindir)
 * reads the installed config file when it exists (config_installed_file);
 * one run from a build tree reads none. self_exe may be NULL. */
/* True when /metrics needs an admin's secret (metrics_auth = admin). */
bool config_metrics_admin(const config *c);

/* True when jobs are handed to Slurm (scheduler = slurm). */
bool config_slurm(const config *c);

config_result config_parse(config *c, int argc, char **argv, const char *self_exe, char *err,
                           size_t errlen);

/* The config file an installed punchcardd reads by default: installed_config
 * when self_exe's directory is installed_bindir and that file exists, else
 * NULL. The two paths come from the build (meson's prefix, bindir and
 * sysconfdir); a parameter so tests can name their own. */
const char *config_installed_file(const char *self_exe, const char *installed_bindir,
                                  const char *installed_config);

void config_usage(FILE *out);

#endif
