/* generate.h — punch-train --generate: text from a trained language model
 * (data.format "text"), one token at a time. */
#ifndef PUNCH_TRAIN_GENERATE_H
#define PUNCH_TRAIN_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "train/train.h"

/* The request file's fields, checked by generate_request_read. */
typedef struct generate_request {
    char *prompt;         /* UTF-8, not empty */
    long max_new_tokens;  /* >= 1 */
    double temperature;   /* >= 0; 0 greedy */
    long top_k;           /* >= 0; 0 all */
    unsigned long long seed;
} generate_request;

/* Read `path`: {"prompt": "...", "max_new_tokens": N, "temperature": T,
 * "top_k": K, "seed": S} (all but prompt optional: 64, 1.0, 0, 0). 0, or
 * -1 with a message naming the field. Free with generate_request_free. */
int generate_request_read(const char *path, generate_request *req, char *err, size_t errlen);
void generate_request_free(generate_request *req);

/* Generated ids as UTF-8 text (malloc'd, NUL-terminated, *len bytes; NULL
 * when out of memory). vocab NULL: ids are bytes, well-formed UTF-8
 * sequences kept as they are and each byte of an ill-formed one (or an id
 * past 255) U+FFFD. Else ids index vocab's nv code points; an id outside
 * it (a class the training text never had) is U+FFFD. */
char *generate_decode(const int32_t *ids, long n, const uint32_t *vocab, int nv, size_t *len);

/* The prompt read from `request` (above) encoded with the job's tokenizer
 * (byte; char with the vocab.json beside opt->weights), then
 * max_new_tokens steps: the model runs on the last data.block_size tokens
 * (a shorter context is a shorter sequence, not padding) and the next
 * token is drawn from the last step's probabilities (sampler.h, seeded).
 * Writes opt->out_dir/generated.json: {"text": the new tokens decoded
 * (bytes that are not UTF-8 become U+FFFD, one per byte), "tokens": their
 * ids}. 0; 1 with a message on a runtime failure; 2 when the request does
 * not fit the job (a bad field, a character outside the vocabulary, a job
 * that is not a language model). */
int train_generate(const job_spec *spec, const train_options *opt, const char *request,
                   char *err, size_t errlen);

#endif
