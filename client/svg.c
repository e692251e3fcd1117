/* svg.c — writing training curves as SVG by hand: the format is small, and
 * a plot a browser opens beats a table nobody reads. Layout constants are
 * in SVG user units (pixels at 100 %). */
#include "svg.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#define SVG_WIDTH 720
#define SVG_PANEL_HEIGHT 280
#define SVG_TITLE_HEIGHT 36
#define SVG_MARGIN_LEFT 72
#define SVG_MARGIN_RIGHT 170
#define SVG_MARGIN_TOP 34
#define SVG_MARGIN_BOTTOM 46
#define SVG_MAX_PANELS 16

/* Keys that are per-epoch arrays but not training curves (the learning
 * rate, timings and throughput: history.json and `punch state` show them). */
static const char *const svg_skipped[] = {"lr", "epoch_time_s", "samples_per_s", "workers",
                                          "commits"};

bool svg_is_series(const char *key, const json_t *value)
{
    if (!json_is_array(value) || json_array_size(value) == 0)
        return false;
    for (size_t i = 0; i < sizeof svg_skipped / sizeof svg_skipped[0]; i++)
        if (strcmp(key, svg_skipped[i]) == 0)
            return false;
    /* A metric series holds numbers (or null for a non-finite value). */
    size_t i;
    const json_t *v;
    json_array_foreach(value, i, v) {
        if (!json_is_number(v) && !json_is_null(v))
            return false;
    }
    return true;
}

/* A panel: one metric, its train and validation series. */
typedef struct svg_panel {
    const char *metric;      /* "loss", "accuracy" (the key without val_) */
    const char *train_key;   /* NULL when only the validation series exists */
    const json_t *train;
    const char *val_key;
    const json_t *val;
} svg_panel;

static const char *svg_base_name(const char *key)
{
    return strncmp(key, "val_", 4) == 0 ? key + 4 : key;
}

/* Group the history's series into panels, loss first. */
static int svg_collect_panels(const json_t *history, svg_panel *panels)
{
    int n = 0;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)history, key, value) {
        if (!svg_is_series(key, value))
            continue;
        const char *base = svg_base_name(key);
        int p = 0;
        while (p < n && strcmp(panels[p].metric, base) != 0)
            p++;
        if (p == n) {
            if (n == SVG_MAX_PANELS)
                continue;
            memset(&panels[n], 0, sizeof panels[n]);
            panels[n].metric = base;
            n++;
        }
        if (base == key) {
            panels[p].train_key = key;
            panels[p].train = value;
        } else {
            panels[p].val_key = key;
            panels[p].val = value;
        }
    }
    for (int p = 1; p < n; p++) {
        if (strcmp(panels[p].metric, "loss") == 0) {
            svg_panel loss = panels[p];
            memmove(&panels[1], &panels[0], (size_t)p * sizeof panels[0]);
            panels[0] = loss;
        }
    }
    return n;
}

static void svg_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            /* Control bytes are not allowed in XML 1.0 text. */
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                fputc(*s, out);
        }
    }
}

/* Min and max of the finite values of a series; false when it has none. */
static bool svg_range(const json_t *series, double *lo, double *hi)
{
    bool any = false;
    size_t i;
    const json_t *v;
    json_array_foreach(series, i, v) {
        if (!json_is_number(v))
            continue;
        double x = json_number_value(v);
        if (!isfinite(x))
            continue;
        if (!any || x < *lo)
            *lo = x;
        if (!any || x > *hi)
            *hi = x;
        any = true;
    }
    return any;
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about n ticks. */
static double svg_tick_step(double span, int n)
{
    double raw = span / n;
    double mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

typedef struct svg_frame {
    double x0, y0, w, h;    /* plot area in panel coordinates */
    double xmin, xmax;      /* epochs */
    double ymin, ymax;
} svg_frame;

static double svg_px(const svg_frame *f, double epoch)
{
    return f->x0 + (epoch - f->xmin) / (f->xmax - f->xmin) * f->w;
}

static double svg_py(const svg_frame *f, double y)
{
    return f->y0 + f->h - (y - f->ymin) / (f->ymax - f->ymin) * f->h;
}

static void svg_axes(FILE *out, const svg_frame *f, const char *metric)
{
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                 "stroke=\"#999\"/>\n", f->x0, f->y0, f->w, f->h);
    double ystep = svg_tick_step(f->ymax - f->ymin, 5);
    for (double y = ceil(f->ymin / ystep) * ystep; y <= f->ymax + ystep * 1e-9; y += ystep) {
        double py = svg_py(f, y);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.4g"
                     "</text>\n", f->x0, py, f->x0 + f->w, py, f->x0 - 6, py + 4,
                fabs(y) < ystep * 1e-9 ? 0.0 : y);
    }
    double span = f->xmax - f->xmin;
    double xstep = span <= 10 ? 1 : svg_tick_step(span, 8);
    for (double x = ceil(f->xmin / xstep) * xstep; x <= f->xmax + 1e-9; x += xstep) {
        double px = svg_px(f, x);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%g"
                     "</text>\n", px, f->y0 + f->h, px, f->y0 + f->h + 5, px,
                f->y0 + f->h + 18, x);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">epoch"
                 "</text>\n", f->x0 + f->w / 2, f->y0 + f->h + 36);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">",
            f->x0, f->y0 - 10);
    svg_text(out, metric);
    fputs("</text>\n", out);
}

/* One series as a path; a non-number breaks the line. */
static void svg_series(FILE *out, const svg_frame *f, const char *key, const json_t *series,
                       const char *color, bool dashed)
{
    fputs("<path class=\"series\" data-series=\"", out);
    svg_text(out, key);
    fprintf(out, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s d=\"", color,
            dashed ? " stroke-dasharray=\"6 4\"" : "");
    bool pen_down = false;
    size_t i;
    const json_t *v;
    json_array_foreach(series, i, v) {
        double y = json_number_value(v);
        if (!json_is_number(v) || !isfinite(y)) {
            pen_down = false;
            continue;
        }
        fprintf(out, "%s%.2f %.2f ", pen_down ? "L" : "M", svg_px(f, (double)i + 1),
                svg_py(f, y));
        pen_down = true;
    }
    fputs("\"><title>", out);
    svg_text(out, key);
    fputs("</title></path>\n", out);
    /* Markers, so a single epoch still shows up. */
    json_array_foreach(series, i, v) {
        double y = json_number_value(v);
        if (json_is_number(v) && isfinite(y))
            fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"%s\"/>\n",
                    svg_px(f, (double)i + 1), svg_py(f, y), color);
    }
}

static void svg_legend_entry(FILE *out, double x, double y, const char *key, const char *color,
                             bool dashed)
{
    fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                 "stroke-width=\"2\"%s/><text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">",
            x, y, x + 24, y, color, dashed ? " stroke-dasharray=\"6 4\"" : "", x + 30, y + 4);
    svg_text(out, key);
    fputs("</text>\n", out);
}

static void svg_panel_write(FILE *out, const svg_panel *p, double top)
{
    svg_frame f = {
        .x0 = SVG_MARGIN_LEFT,
        .y0 = SVG_MARGIN_TOP,
        .w = SVG_WIDTH - SVG_MARGIN_LEFT - SVG_MARGIN_RIGHT,
        .h = SVG_PANEL_HEIGHT - SVG_MARGIN_TOP - SVG_MARGIN_BOTTOM,
    };
    size_t epochs = json_array_size(p->train);
    if (json_array_size(p->val) > epochs)
        epochs = json_array_size(p->val);
    f.xmin = 1;
    f.xmax = epochs > 1 ? (double)epochs : 2;
    double lo = 0, hi = 1, vlo, vhi;
    bool any = p->train != NULL && svg_range(p->train, &lo, &hi);
    if (p->val != NULL && svg_range(p->val, &vlo, &vhi)) {
        lo = any && lo < vlo ? lo : vlo;
        hi = any && hi > vhi ? hi : vhi;
        any = true;
    }
    /* Pad the range so the curves do not touch the frame. */
    double pad = (hi - lo) * 0.08;
    if (pad == 0)
        pad = fabs(hi) > 0 ? fabs(hi) * 0.1 : 0.5;
    f.ymin = lo - pad;
    f.ymax = hi + pad;

    fprintf(out, "<g class=\"panel\" data-metric=\"");
    svg_text(out, p->metric);
    fprintf(out, "\" transform=\"translate(0,%.0f)\">\n", top);
    svg_axes(out, &f, p->metric);
    double lx = f.x0 + f.w + 16, ly = f.y0 + 14;
    fputs("<g class=\"legend\">\n", out);
    if (p->train != NULL)
        svg_legend_entry(out, lx, ly, p->train_key, "#1f77b4", false);
    if (p->val != NULL)
        svg_legend_entry(out, lx, ly + (p->train != NULL ? 20 : 0), p->val_key, "#ff7f0e",
                         true);
    fputs("</g>\n", out);
    if (p->train != NULL)
        svg_series(out, &f, p->train_key, p->train, "#1f77b4", false);
    if (p->val != NULL)
        svg_series(out, &f, p->val_key, p->val, "#ff7f0e", true);
    fputs("</g>\n", out);
}

int svg_write_curves(const json_t *history, const char *title, FILE *out)
{
    svg_panel panels[SVG_MAX_PANELS];
    int n = svg_collect_panels(history, panels);
    int height = SVG_TITLE_HEIGHT + (n > 0 ? n : 1) * SVG_PANEL_HEIGHT;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
            SVG_WIDTH, height, SVG_WIDTH, height);
    fputs("<title>", out);
    svg_text(out, title);
    fputs(" — training curves</title>\n", out);
    fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                 "<text x=\"%d\" y=\"24\" font-size=\"16\">", SVG_MARGIN_LEFT);
    svg_text(out, title);
    fputs("</text>\n", out);
    if (n == 0)
        fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"14\">no epochs finished yet</text>\n",
                SVG_MARGIN_LEFT, SVG_TITLE_HEIGHT + 40);
    for (int p = 0; p < n; p++)
        svg_panel_write(out, &panels[p], SVG_TITLE_HEIGHT + p * SVG_PANEL_HEIGHT);
    fputs("</svg>\n", out);
    if (ferror(out)) {
        if (errno == 0)
            errno = EIO;
        return -1;
    }
    return 0;
}
