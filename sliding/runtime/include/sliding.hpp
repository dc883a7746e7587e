/*
 * sliding.hpp -- the sliding runtime (sliding.h) from C++: its calls as they
 * are, plus an exception for the check-once style, so that a failure leaves
 * the iteration by a throw and is recovered in one catch.
 *
 *     sliding_t *s;
 *     ...                                         // create, dims, register, start: as in sliding.h
 *     int it = version < 0 ? 0 : (int)version;
 *     while (role != SLIDING_FINISHED) {
 *         try {
 *             while (it < n) {
 *                 step(cart, it, u);               // MPI calls on cart go unchecked
 *                 it++;
 *                 if (it % 10 == 0) sliding_checkpoint(s, it);
 *                 sliding::check(s);               // throws after the iteration's first error
 *             }
 *             sliding::check(sliding_finish(s));  // throws unless every worker completed
 *             break;
 *         } catch (const sliding::failure &) {      // a recovery's own failure is thrown out of the loop
 *             sliding::check(sliding_recover(s, &cart, &role, &version));
 *             if (role == SLIDING_FINISHED) break;
 *             if (version < 0) initialize(u, cart);
 *             it = version < 0 ? 0 : (int)version;
 *         }
 *     }
 *
 * A sliding::failure carries the status: SLIDING_ERR_FAILED from a check
 * means recover; any other (SLIDING_ERR_NO_SPARE from sliding_recover, ...)
 * ends the run, with the same status at every process. Only sliding
 * statuses go to check(int): sliding_checkpoint returns MPI error codes,
 * and its failure shows in the next check(s).
 *
 * A recovery callback (sliding_on_recovery) is called from C: it must not
 * let an exception out (catch it and return non-zero). There is no RAII
 * owner for sliding_t on purpose: sliding_free must run before
 * MPI_Finalize, which a destructor at the end of main would not.
 */
#ifndef SLIDING_HPP
#define SLIDING_HPP

#include <stdexcept>
#include <string>

#include "sliding.h"

namespace sliding {

/* A status other than SLIDING_OK; what() is its name and one-line message. */
class failure : public std::runtime_error {
public:
    explicit failure(int status)
        : std::runtime_error(describe(status)), status_(status) {}

    int status() const noexcept { return status_; }

private:
    static std::string describe(int status)
    {
        const char *name = sliding_status_name(status);
        return std::string(name ? name : "unknown status") + ": " + sliding_strerror(status);
    }

    int status_;
};

/* Throws failure(status) unless it is SLIDING_OK. */
inline void check(int status)
{
    if (status != SLIDING_OK) {
        throw failure(status);
    }
}

/* Throws failure(SLIDING_ERR_FAILED) when this worker must recover
 * (!sliding_ok(s)): the check at the end of an iteration. */
inline void check(const sliding_t *s)
{
    if (!sliding_ok(s)) {
        throw failure(SLIDING_ERR_FAILED);
    }
}

} // namespace sliding

#endif
