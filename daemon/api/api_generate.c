/* api_generate.c — POST /api/v1/jobs/{id}/generate: text from a finished
 * language model (data.format "text"), continuing a prompt.
 *
 * As /predict (api_predict.c), the model runs in `punch-train
 * RUNDIR/job.json --weights RUNDIR/weights.safetensors --generate REQ
 * --out TMPDIR` under engine_run's time limit: the daemon links no model
 * code. The request is checked here, field by field, against the
 * configured bounds (generate_max_tokens, generate_max_prompt) so a bad
 * one costs no process; the checked request is written to TMPDIR as the
 * engine's input and generated.json read back as the reply, on the engine
 * pool (api_engine.c) as predictions are. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "log.h"
#include "run/rundir.h"

#define API_GENERATE_TIMEOUT_S 300
#define API_GENERATE_DEFAULT_TOKENS 64
#define API_GENERATE_MAX_TOP_K (1 << 20)

/* The request's fields, with defaults, as one object for the engine; NULL
 * after a 400 naming the field (*reply). */
static json_t *api_generate_request(api_request *r, enum MHD_Result *reply)
{
    const config *cfg = &r->d->cfg;
    json_error_t je;
    json_t *body = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &je);
    const char *bad = NULL, *why = NULL;
    char msg[256];
    if (!json_is_object(body)) {
        *reply = api_reply_error(r, MHD_HTTP_BAD_REQUEST, NULL,
                                 "the body must be a JSON object: {\"prompt\": \"...\", ...}");
        json_decref(body);
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
        if (strcmp(key, "prompt") != 0 && strcmp(key, "max_new_tokens") != 0 &&
            strcmp(key, "temperature") != 0 && strcmp(key, "top_k") != 0 &&
            strcmp(key, "seed") != 0 && !bad) {
            bad = key;
            why = "unknown field (prompt, max_new_tokens, temperature, top_k, seed)";
        }
    json_t *prompt = json_object_get(body, "prompt");
    json_t *max_new = json_object_get(body, "max_new_tokens");
    json_t *temp = json_object_get(body, "temperature");
    json_t *top_k = json_object_get(body, "top_k");
    json_t *seed = json_object_get(body, "seed");
    long default_tokens = cfg->generate_max_tokens < API_GENERATE_DEFAULT_TOKENS
                              ? cfg->generate_max_tokens
                              : API_GENERATE_DEFAULT_TOKENS;
    if (bad) {
    } else if (!json_is_string(prompt) || json_string_length(prompt) == 0) {
        bad = "prompt", why = "must be a non-empty string";
    } else if ((long)json_string_length(prompt) > cfg->generate_max_prompt) {
        snprintf(msg, sizeof msg, "%zu bytes, over %ld (generate_max_prompt)",
                 json_string_length(prompt), cfg->generate_max_prompt);
        bad = "prompt", why = msg;
    } else if (max_new && (!json_is_integer(max_new) || json_integer_value(max_new) < 1 ||
                           json_integer_value(max_new) > cfg->generate_max_tokens)) {
        snprintf(msg, sizeof msg, "must be an integer from 1 to %ld (generate_max_tokens)",
                 cfg->generate_max_tokens);
        bad = "max_new_tokens", why = msg;
    } else if (temp && (!json_is_number(temp) || json_number_value(temp) < 0 ||
                        json_number_value(temp) > 100)) {
        bad = "temperature", why = "must be a number from 0 (greedy) to 100";
    } else if (top_k && (!json_is_integer(top_k) || json_integer_value(top_k) < 0 ||
                         json_integer_value(top_k) > API_GENERATE_MAX_TOP_K)) {
        bad = "top_k", why = "must be an integer from 0 (all tokens) to 1048576";
    } else if (seed && (!json_is_integer(seed) || json_integer_value(seed) < 0)) {
        bad = "seed", why = "must be a non-negative integer";
    }
    if (bad) {
        *reply = api_reply_error(r, MHD_HTTP_BAD_REQUEST, bad, "%s: %s", bad, why);
        json_decref(body);
        return NULL;
    }
    json_t *req = json_pack("{s:O,s:I,s:f,s:I,s:I}", "prompt", prompt, "max_new_tokens",
                            (json_int_t)(max_new ? json_integer_value(max_new)
                                                 : default_tokens),
                            "temperature", temp ? json_number_value(temp) : 1.0, "top_k",
                            (json_int_t)(top_k ? json_integer_value(top_k) : 0), "seed",
                            (json_int_t)(seed ? json_integer_value(seed) : 0));
    json_decref(body);
    if (!req)
        *reply = api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
    return req;
}

/* Whether the run directory's job.json trains a language model. */
static bool api_generate_is_lm(const char *spec_path)
{
    json_t *spec = json_load_file(spec_path, 0, NULL);
    const char *format = json_string_value(json_object_get(json_object_get(spec, "data"),
                                                           "format"));
    bool lm = format && strcmp(format, "text") == 0;
    json_decref(spec);
    return lm;
}

/* The engine's generated.json in dir as the reply (api_engine_run). */
static enum MHD_Result api_generate_reply(api_request *r, const char *dir, int rc,
                                          const char *msg)
{
    /* The engine's refusals that are the prompt's (a character outside the
     * vocabulary) name it as the field. */
    if (rc == 2)
        return api_reply_error(r, MHD_HTTP_BAD_REQUEST,
                               strncmp(msg, "prompt:", 7) == 0 ? "prompt" : NULL, "%s", msg);
    char path[4200];
    snprintf(path, sizeof path, "%s/generated.json", dir);
    json_t *out = rc == 0 ? json_load_file(path, 0, NULL) : NULL;
    if (!json_is_object(out)) {
        json_decref(out);
        log_error("job %s (for %s): generation failed: %s", r->job_id, r->caller.identity,
                  msg);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "generation failed: %s",
                               msg[0] ? msg : "no generated.json");
    }
    return api_reply_json(r, MHD_HTTP_OK, out);
}

enum MHD_Result api_job_generate(api_request *r)
{
    daemon_ctx *d = r->d;
    const store_job *job = r->job;
    char spec[4096], weights[4096], dir[4096], reqpath[4200];
    enum MHD_Result reply;
    if (!api_job_final_weights(r, spec, weights, "generate with", &reply))
        return reply;
    if (!api_generate_is_lm(spec))
        return api_reply_error(r, MHD_HTTP_CONFLICT, NULL,
                               "job %s is not a language model: generation needs a job "
                               "trained on data.format \"text\"", job->id);
    reply = MHD_NO;
    json_t *req = api_generate_request(r, &reply);
    if (!req)
        return reply;
    /* DATA_DIR/tmp is made by the first upload or prediction (api_stream.c),
     * perhaps not yet. */
    snprintf(dir, sizeof dir, "%s/tmp", d->cfg.data_dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        json_decref(req);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "%s: %s", dir,
                               strerror(errno));
    }
    snprintf(dir, sizeof dir, "%s/tmp/generate-XXXXXX", d->cfg.data_dir);
    if (!mkdtemp(dir)) {
        json_decref(req);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                               "cannot make a directory for the request: %s", strerror(errno));
    }
    snprintf(reqpath, sizeof reqpath, "%s/request.json", dir);
    int wrote = json_dump_file(req, reqpath, JSON_COMPACT);
    json_decref(req);
    if (wrote != 0) {
        int saved = errno;
        unlink(reqpath);
        rmdir(dir);
        return api_reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL,
                               "generation failed: cannot write the request file: %s",
                               strerror(saved));
    }
    api_engine_run run = {spec, weights, "--generate", reqpath, dir, API_GENERATE_TIMEOUT_S,
                          api_generate_reply};
    return api_engine_submit(r, &run);
}
