/*
 * The rank's TCP connections (on one node: to its PMIx server) send small
 * messages at once (TCP_NODELAY; patch pmix/02). Without it, a failure event
 * the server writes while the client still owes an ACK waits about 40 ms.
 * np 2, nobody killed. Each rank reports how many connected TCP sockets it has
 * and how many of them have TCP_NODELAY set.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "ftcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int tcp = 0, nodelay = 0;
    DIR *dir = opendir("/proc/self/fd");
    for (struct dirent *e; NULL != dir && NULL != (e = readdir(dir));) {
        if ('.' == e->d_name[0]) continue;
        int fd = atoi(e->d_name), domain = 0, type = 0, on = 0;
        socklen_t len = sizeof(int);
        struct sockaddr_storage peer;
        socklen_t plen = sizeof(peer);
        if (fd == dirfd(dir) || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) continue;
        len = sizeof(int);
        if ((domain != AF_INET && domain != AF_INET6) || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
            type != SOCK_STREAM || getpeername(fd, (struct sockaddr *)&peer, &plen) != 0) {
            continue;
        }
        tcp++;
        len = sizeof(int);
        if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len) == 0 && on) nodelay++;
    }
    if (NULL != dir) closedir(dir);
    FTCHECK("tcp", "%d", tcp);
    FTCHECK("nodelay", "%d", nodelay);
    MPI_Finalize();
    return 0;
}
