#include <ctype.h>
#include <stddef.h>

/* Lower-cases a word in place and returns its length. */
size_t lower_word(char *word) {
    size_t n = 0;
    for (; word[n] != '\0'; n++) {
        word[n] = (char)tolower((unsigned char)word[n]);
    }
    return n;
}

struct keyword_list {
    char **words;
    size_t count;
};
