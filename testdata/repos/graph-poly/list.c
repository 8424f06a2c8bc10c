#include <stdlib.h>

#define LIST_MAX 64

/* A singly linked list node. */
struct node {
    int value;
    struct node *next;
};

static struct node *push(struct node *head, int value) {
    struct node *n = malloc(sizeof *n);
    n->value = value;
    n->next = head;
    return n;
}

int length(struct node *head) {
    return head ? 1 + length(head->next) : 0;
}

int main(void) {
    struct node *l = push(push(NULL, 1), 2);
    return length(l);
}
