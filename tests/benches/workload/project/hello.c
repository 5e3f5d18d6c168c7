/* The fixture's C program: built by `make`. */
#include <stdio.h>

int main(void) {
    puts("hello");
    return 0;
}
