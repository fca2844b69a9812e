#define GREETING "Hello"
