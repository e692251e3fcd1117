/* schedule.c — PyDTNN's learning-rate schedules and callbacks, evaluated
 * once per epoch.
 *
 * Shared rules (PyDTNN's, with the departures noted; the README's job-spec
 * section lists all of them, including the parameter names):
 * - A monitor whose name contains "accuracy" improves upwards; any other
 *   (losses, mse, mae) downwards. An improvement must beat the best value
 *   so far by more than min_delta (PyDTNN has no min_delta: it is 0 there).
 * - "val_X" falls back to "X" when the epoch has no validation values; a
 *   monitor found under neither name leaves its callback idle that epoch.
 * - A reduction multiplies the rate by factor but never takes it below
 *   min_lr: it is clamped to min_lr, as Keras does (PyDTNN instead skips a
 *   reduction that would cross min_lr, so the floor may never be reached).
 * - Warm-up owns the rate while it runs: a plateau that matures during
 *   warm-up reduces the rate as soon as the ramp has finished, and an
 *   every-n-epochs reduction that falls inside the ramp is skipped. */
#include <math.h>
#include <string.h>

#include "optim/schedule.h"

/* The callbacks to run: the spec guarantees at most SPEC_MAX_SCHEDULES,
 * and the state arrays hold no more. */
static int schedule_count(const spec_training *t)
{
    if (t->n_schedules < 0)
        return 0;
    return t->n_schedules < SPEC_MAX_SCHEDULES ? t->n_schedules : SPEC_MAX_SCHEDULES;
}

static bool schedule_maximizes(const char *monitor)
{
    return strstr(monitor, "accuracy") != NULL;
}

/* The monitored value for this epoch; false when the epoch has none. */
static bool schedule_lookup(const epoch_metrics *m, const char *monitor, double *out)
{
    int n = m->n < 16 ? m->n : 16;
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            if (m->names[i] && strcmp(m->names[i], monitor) == 0) {
                *out = m->values[i];
                return true;
            }
        }
        if (strncmp(monitor, "val_", 4) != 0)
            return false;
        monitor += 4;
    }
    return false;
}

/* Whether value beats best by more than min_delta. NaN never improves. */
static bool schedule_improved(const spec_schedule *s, double best, double value)
{
    if (schedule_maximizes(s->monitor))
        return value > best + s->min_delta;
    return value < best - s->min_delta;
}

/* True while epoch still belongs to a warm-up ramp. */
static bool schedule_in_warmup(const spec_training *t, int epoch)
{
    for (int i = 0; i < schedule_count(t); i++) {
        const spec_schedule *s = &t->schedules[i];
        if (s->kind == SCHED_WARM_UP && epoch < s->warmup_epochs)
            return true;
    }
    return false;
}

/* lr *= factor, clamped to min_lr; a rate already at or below min_lr is
 * left alone rather than raised. */
static void schedule_reduce(schedule_state *st, const spec_schedule *s)
{
    if (st->lr <= s->min_lr)
        return;
    double lr = st->lr * s->factor;
    st->lr = lr < s->min_lr ? s->min_lr : lr;
}

void schedule_init(schedule_state *st, const spec_training *t)
{
    memset(st, 0, sizeof *st);
    st->base_lr = t->optimizer.learning_rate;
    st->lr = st->base_lr;
    for (int i = 0; i < SPEC_MAX_SCHEDULES; i++) {
        bool up = i < schedule_count(t) && schedule_maximizes(t->schedules[i].monitor);
        st->best[i] = up ? -INFINITY : INFINITY;
        st->best_epoch[i] = -1;
    }
}

double schedule_epoch_begin(schedule_state *st, const spec_training *t, int epoch)
{
    for (int i = 0; i < schedule_count(t); i++) {
        const spec_schedule *s = &t->schedules[i];
        if (s->kind != SCHED_WARM_UP || epoch >= s->warmup_epochs)
            continue;
        double frac = (double)epoch / (double)s->warmup_epochs;
        st->lr = s->init_lr + (st->base_lr - s->init_lr) * frac;
    }
    return st->lr;
}

/* Records value for schedule i; returns whether it improved. */
static bool schedule_track(schedule_state *st, int i, const spec_schedule *s, int epoch,
                           double value)
{
    if (!schedule_improved(s, st->best[i], value)) {
        st->wait[i]++;
        return false;
    }
    st->best[i] = value;
    st->best_epoch[i] = epoch;
    st->wait[i] = 0;
    return true;
}

bool schedule_epoch_end(schedule_state *st, const spec_training *t, int epoch,
                        const epoch_metrics *m)
{
    int done = epoch + 1; /* epochs completed, PyDTNN's epoch_count */
    bool ramp_next = schedule_in_warmup(t, done);
    if (!ramp_next && schedule_in_warmup(t, epoch))
        st->lr = st->base_lr; /* the ramp ends: the next epoch runs at base */
    bool save = false;
    for (int i = 0; i < schedule_count(t); i++) {
        const spec_schedule *s = &t->schedules[i];
        double value = 0.0;
        bool have = s->kind != SCHED_WARM_UP && s->kind != SCHED_REDUCE_LR_EVERY_NEPOCHS &&
                    s->kind != SCHED_COSINE &&
                    s->monitor[0] != '\0' && schedule_lookup(m, s->monitor, &value);
        switch (s->kind) {
        case SCHED_WARM_UP:
        case SCHED_COSINE: /* per step: schedule_step_lr */
            break;
        case SCHED_EARLY_STOPPING:
            if (have && !schedule_track(st, i, s, epoch, value) && st->wait[i] >= s->patience)
                st->stop = true;
            break;
        case SCHED_REDUCE_LR_ON_PLATEAU:
            if (!have || schedule_track(st, i, s, epoch, value))
                break;
            if (!ramp_next && st->wait[i] >= s->patience) {
                schedule_reduce(st, s);
                st->wait[i] = 0;
            }
            break;
        case SCHED_REDUCE_LR_EVERY_NEPOCHS:
            if (s->nepochs > 0 && done % s->nepochs == 0 && !ramp_next)
                schedule_reduce(st, s);
            break;
        case SCHED_MODEL_CHECKPOINT: {
            bool due = done % (s->every_epochs > 0 ? s->every_epochs : 1) == 0;
            /* Without a monitor (or its value) the checkpoint is periodic. */
            bool better = have ? schedule_track(st, i, s, epoch, value) : true;
            save = save || (due && better);
            break;
        }
        }
    }
    /* stop_at_loss: PyDTNN stops as soon as the value reaches the
     * threshold (at or above for accuracy, at or below for the rest). */
    double value;
    if (t->stop_metric[0] && schedule_lookup(m, t->stop_metric, &value) &&
        (schedule_maximizes(t->stop_metric) ? value >= t->stop_threshold
                                            : value <= t->stop_threshold))
        st->stop = true;
    return save;
}

/* nanoGPT's get_lr, in double (see schedule.h). */
static double schedule_cosine_lr(const spec_schedule *s, uint64_t it, uint64_t run_steps,
                                 double lr)
{
    double w = (double)s->warmup_steps;
    double d = (double)(s->decay_steps > 0 ? (uint64_t)s->decay_steps : run_steps);
    double x = (double)it;
    if (x < w)
        return lr * (x + 1.0) / (w + 1.0);
    if (x > d || d <= w)
        return s->min_lr;
    double coeff = 0.5 * (1.0 + cos(M_PI * (x - w) / (d - w)));
    return s->min_lr + coeff * (lr - s->min_lr);
}

float schedule_step_lr(const spec_training *t, uint64_t steps_done, uint64_t run_steps,
                       float lr)
{
    for (int i = 0; i < schedule_count(t); i++)
        if (t->schedules[i].kind == SCHED_COSINE)
            return (float)schedule_cosine_lr(&t->schedules[i], steps_done, run_steps, lr);
    long n = t->warm_up_batches;
    if (n <= 0 || steps_done >= (uint64_t)n)
        return lr;
    return lr * (float)(steps_done + 1) / (float)n;
}

uint64_t schedule_opt_steps(long epoch, long step, long steps_per_epoch, int accum)
{
    uint64_t k = accum > 1 ? (uint64_t)accum : 1;
    uint64_t per_epoch = ((uint64_t)steps_per_epoch + k - 1) / k;
    return (uint64_t)epoch * per_epoch + (uint64_t)step / k;
}
