/* placement.c — packing a job onto hosts (policy and contract in
 * placement.h). */
#include "sched/placement.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

placement_need placement_need_of(const store_job *job)
{
    placement_need n = {job->ranks, job->workers, job->gpus, job->mem_per_rank};
    if (n.workers <= 0 || n.workers > n.ranks)
        n.workers = n.ranks;
    return n;
}

/* Ranks before the first worker: 1 when rank 0 is a parameter server. */
static int placement_servers(placement_need need)
{
    return need.ranks > need.workers ? 1 : 0;
}

/* GPUs of workers [first, last) out of need.workers. */
static int placement_worker_gpus(placement_need need, int first, int last)
{
    if (need.workers <= 0 || last <= first)
        return 0;
    long g = need.gpus, w = need.workers;
    return (int)(g * last / w - g * first / w);
}

/* GPUs of ranks [first, first + k) of the job. */
static int placement_rank_gpus(placement_need need, int first, int k)
{
    int s = placement_servers(need);
    int lo = first - s, hi = first + k - s;
    return placement_worker_gpus(need, lo < 0 ? 0 : lo, hi < 0 ? 0 : hi);
}

/* How many of the ranks from `first` on (at most `want`) host h can take. */
static int placement_host_takes(const placement_cluster *c, int h, placement_need need,
                                int first, int want)
{
    if (c->down[h])
        return 0;
    int k = want < c->slots[h] ? want : c->slots[h];
    if (need.mem_per_rank > 0 && c->mem[h] >= 0 && k > c->mem[h] / need.mem_per_rank)
        k = (int)(c->mem[h] / need.mem_per_rank);
    while (k > 0 && placement_rank_gpus(need, first, k) > c->gpus[h])
        k--;
    return k;
}

bool placement_pack(const placement_cluster *free_cap, placement_need need, placement *out)
{
    out->n = 0;
    if (need.ranks <= 0)
        return false;
    for (int h = 0; h < free_cap->n_hosts; h++)
        if (placement_host_takes(free_cap, h, need, 0, need.ranks) == need.ranks) {
            out->part[0] = (placement_part){h, need.ranks};
            out->n = 1;
            return true;
        }
    int placed = 0;
    for (int h = 0; h < free_cap->n_hosts && placed < need.ranks; h++) {
        int k = placement_host_takes(free_cap, h, need, placed, need.ranks - placed);
        if (k == 0)
            continue;
        out->part[out->n++] = (placement_part){h, k};
        placed += k;
    }
    if (placed < need.ranks) {
        out->n = 0;
        return false;
    }
    return true;
}

int placement_part_gpus(placement_need need, const placement *a, int i)
{
    int first = 0;
    for (int p = 0; p < i; p++)
        first += a->part[p].ranks;
    return placement_rank_gpus(need, first, a->part[i].ranks);
}

void placement_take(placement_cluster *free_cap, placement_need need, const placement *a)
{
    for (int i = 0; i < a->n; i++) {
        int h = a->part[i].host;
        if (h < 0 || h >= free_cap->n_hosts)
            continue;
        int g = placement_part_gpus(need, a, i);
        free_cap->slots[h] = free_cap->slots[h] > a->part[i].ranks
                                 ? free_cap->slots[h] - a->part[i].ranks : 0;
        free_cap->gpus[h] = free_cap->gpus[h] > g ? free_cap->gpus[h] - g : 0;
        if (free_cap->mem[h] >= 0) {
            double m = free_cap->mem[h] - need.mem_per_rank * a->part[i].ranks;
            free_cap->mem[h] = m > 0 ? m : 0;
        }
    }
}

char *placement_to_json(const placement *a, const char *const *names)
{
    json_t *arr = json_array();
    if (!arr)
        return NULL;
    for (int i = 0; i < a->n; i++) {
        json_t *o = json_pack("{s:s, s:i}", "host", names[a->part[i].host], "ranks",
                              a->part[i].ranks);
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    char *text = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return text;
}

bool placement_from_json(const char *text, const char *const *names, int n, placement *out)
{
    out->n = 0;
    json_t *arr = json_loads(text, 0, NULL);
    if (!json_is_array(arr)) {
        json_decref(arr);
        return false;
    }
    bool ok = true;
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        const char *host = json_string_value(json_object_get(o, "host"));
        json_t *ranks = json_object_get(o, "ranks");
        if (!host || !json_is_integer(ranks) || json_integer_value(ranks) < 1 ||
            out->n == PLACEMENT_MAX_HOSTS) {
            ok = false;
            break;
        }
        for (int h = 0; h < n; h++)
            if (strcmp(names[h], host) == 0) {
                out->part[out->n++] = (placement_part){h, (int)json_integer_value(ranks)};
                break;
            }
    }
    json_decref(arr);
    if (!ok)
        out->n = 0;
    return ok;
}

bool placement_hostfile(const placement *a, const char *const *names, char *buf, size_t cap)
{
    if (cap == 0)
        return false;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < a->n; i++) {
        int w = snprintf(buf + used, cap - used, "%s slots=%d\n", names[a->part[i].host],
                         a->part[i].ranks);
        if (w < 0 || (size_t)w >= cap - used)
            return false;
        used += (size_t)w;
    }
    return true;
}
