/*
 * schedule.c — the learning-rate schedule: linear warmup, then cosine decay to
 * a final rate. A pure function of the step, so a resumed run continues it
 * without saving anything.
 */
#include <math.h>

#include <symtrain/optim.h>

float sym_lr_at(const sym_lr_schedule_t *s, int64_t step) {
    if (step < 0) step = 0;
    if (s->warmup > 0 && step < s->warmup)
        return s->peak * (float)(step + 1) / (float)s->warmup;
    int64_t span = s->total_steps - s->warmup;
    if (span <= 0) return s->peak;
    double progress = (double)(step - s->warmup) / (double)span;
    if (progress > 1.0) progress = 1.0;
    return (float)((double)s->final +
                   ((double)s->peak - (double)s->final) * 0.5 * (1.0 + cos(M_PI * progress)));
}
