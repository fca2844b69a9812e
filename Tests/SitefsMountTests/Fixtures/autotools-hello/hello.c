#include <config.h>
#include <stdio.h>
#include "greeting.h"

int main(void) {
    printf("%s from %s\n", GREETING, PACKAGE_STRING);
    return 0;
}
