/* pagecache.c — a small LRU of encoded job-list pages (pagecache.h). */
#include "api/pagecache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct pagecache_entry {
    char key[PAGECACHE_KEY_MAX];
    uint64_t writes;
    char *text; /* NULL: empty slot */
    size_t len;
    uint64_t used; /* the cache's clock at the last get or put */
} pagecache_entry;

struct pagecache {
    pthread_mutex_t lock;
    uint64_t clock;
    pagecache_entry e[PAGECACHE_ENTRIES];
};

pagecache *pagecache_new(void)
{
    pagecache *pc = calloc(1, sizeof *pc);
    if (pc)
        pthread_mutex_init(&pc->lock, NULL);
    return pc;
}

void pagecache_free(pagecache *pc)
{
    if (!pc)
        return;
    for (int i = 0; i < PAGECACHE_ENTRIES; i++)
        free(pc->e[i].text);
    pthread_mutex_destroy(&pc->lock);
    free(pc);
}

char *pagecache_get(pagecache *pc, const char *key, uint64_t writes, size_t *len)
{
    char *copy = NULL;
    pthread_mutex_lock(&pc->lock);
    for (int i = 0; i < PAGECACHE_ENTRIES; i++) {
        pagecache_entry *e = &pc->e[i];
        if (!e->text || e->writes != writes || strcmp(e->key, key) != 0)
            continue;
        if ((copy = malloc(e->len + 1))) {
            memcpy(copy, e->text, e->len + 1);
            *len = e->len;
            e->used = ++pc->clock;
        }
        break;
    }
    pthread_mutex_unlock(&pc->lock);
    return copy;
}

void pagecache_put(pagecache *pc, const char *key, uint64_t writes, const char *text, size_t len)
{
    if (strlen(key) >= PAGECACHE_KEY_MAX)
        return;
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, text, len);
    copy[len] = '\0';
    pthread_mutex_lock(&pc->lock);
    /* The same key's slot, else an empty one, else the least recently used. */
    pagecache_entry *slot = NULL;
    for (int i = 0; i < PAGECACHE_ENTRIES && !slot; i++)
        if (pc->e[i].text && strcmp(pc->e[i].key, key) == 0)
            slot = &pc->e[i];
    for (int i = 0; i < PAGECACHE_ENTRIES && !slot; i++)
        if (!pc->e[i].text)
            slot = &pc->e[i];
    if (!slot) {
        slot = &pc->e[0];
        for (int i = 1; i < PAGECACHE_ENTRIES; i++)
            if (pc->e[i].used < slot->used)
                slot = &pc->e[i];
    }
    /* A page read at an older count than the one kept is not newer. */
    if (slot->text && strcmp(slot->key, key) == 0 && slot->writes > writes) {
        pthread_mutex_unlock(&pc->lock);
        free(copy);
        return;
    }
    free(slot->text);
    strcpy(slot->key, key);
    slot->writes = writes;
    slot->text = copy;
    slot->len = len;
    slot->used = ++pc->clock;
    pthread_mutex_unlock(&pc->lock);
}
