/*
 * coll/ftera: component structure and MCA parameters.
 */
#include "ompi_config.h"

#include <stdio.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"
#include "ompi/mca/coll/coll.h"

#include "coll_ftera.h"

const char *mca_coll_ftera_component_version_string =
    "ftslide ftera (Early Returning Agreement) collective MCA component version " OMPI_VERSION;

/* Above upstream's ftagree (30), so that ours is the default. */
int mca_coll_ftera_priority = 40;
int mca_coll_ftera_tree = MCA_COLL_FTERA_TREE_AUTO;
int mca_coll_ftera_mode = ERA_MODE_EARLY;
int mca_coll_ftera_verbose = 0;
int mca_coll_ftera_fragment_size = 0;
int mca_coll_ftera_output = -1;

static int ftera_register(void);
static int ftera_open(void);
static int ftera_close(void);

const mca_coll_base_component_2_4_0_t mca_coll_ftera_component = {
    .collm_version = {
        MCA_COLL_BASE_VERSION_2_4_0,
        .mca_component_name = "ftera",
        MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION),
        .mca_open_component = ftera_open,
        .mca_close_component = ftera_close,
        .mca_register_component_params = ftera_register,
    },
    .collm_data = {
        MCA_BASE_METADATA_PARAM_CHECKPOINT
    },
    .collm_init_query = mca_coll_ftera_init_query,
    .collm_comm_query = mca_coll_ftera_comm_query,
};

static const mca_base_var_enum_value_t tree_values[] = {
    {ERA_TREE_BINOMIAL, "binomial"},
    {ERA_TREE_BINARY, "binary"},
    {ERA_TREE_KNOMIAL4, "knomial4"},
    {MCA_COLL_FTERA_TREE_AUTO, "auto"},
    {0, NULL}
};

static const mca_base_var_enum_value_t mode_values[] = {
    {ERA_MODE_EARLY, "early"},
    {ERA_MODE_UNIFORM, "uniform"},
    {0, NULL}
};

/* Register one enum-valued parameter: Open MPI's enum check then refuses an
 * invalid value with the parameter's name and its valid values. */
static int register_enum(const char *name, const mca_base_var_enum_value_t *values, int default_value,
                         int level, const char *description, int *storage)
{
    char enum_name[64];
    mca_base_var_enum_t *values_enum = NULL;

    snprintf(enum_name, sizeof enum_name, "coll_ftera_%s", name);
    int rc = mca_base_var_enum_create(enum_name, values, &values_enum);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    *storage = default_value;
    (void) mca_base_component_var_register(&mca_coll_ftera_component.collm_version, name, description,
        MCA_BASE_VAR_TYPE_INT, values_enum, 0, 0, level, MCA_BASE_VAR_SCOPE_READONLY, storage);
    OBJ_RELEASE(values_enum);
    return OMPI_SUCCESS;
}

/* Register one int-valued parameter. */
static void register_int(const char *name, int default_value, int level, mca_base_var_scope_t scope,
                         const char *description, int *storage)
{
    *storage = default_value;
    (void) mca_base_component_var_register(&mca_coll_ftera_component.collm_version, name, description,
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level, scope, storage);
}

static void register_counter(const char *name, const char *description, unsigned long long *storage)
{
    (void) mca_base_pvar_register("ompi", "coll", "ftera", name, description, OPAL_INFO_LVL_4,
                                  MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                  MCA_BASE_VAR_BIND_NO_OBJECT,
                                  MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL,
                                  storage);
}

static int ftera_register(void)
{
    int rc;

    register_int("priority", 40, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY,
        "Priority of the ftera agreement component (upstream's ftagree has 30 by default; the highest "
        "priority provides MPIX_Comm_agree/iagree and the agreement of MPIX_Comm_shrink)",
        &mca_coll_ftera_priority);
    rc = register_enum("tree", tree_values, MCA_COLL_FTERA_TREE_AUTO, OPAL_INFO_LVL_5,
        "Shape of the agreement tree over the ranks not yet agreed failed (rebuilt from each agreed "
        "failed set): binomial (parent = position with its lowest set bit cleared), binary (binary heap), "
        "knomial4 (the same as binomial in base 4: half the depth, up to 3 children per base-4 digit) or "
        "auto (knomial4 when the whole job runs on one node, where a tree level costs a process wake-up "
        "and a send costs a memory copy; binomial across nodes)",
        &mca_coll_ftera_tree);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = register_enum("mode", mode_values, ERA_MODE_EARLY, OPAL_INFO_LVL_5,
        "Agreement mode: early (two tree traversals; every surviving process decides the same, as "
        "MPIX_Comm_agree specifies) or uniform (four traversals; also a process that decides and then "
        "crashes decided what the survivors decide)",
        &mca_coll_ftera_mode);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    register_int("fragment_size", 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        "Largest BTL fragment of an agreement message, our 40-byte header included (0: the BTL's eager "
        "limit; smaller values, at least 48, split even failure-free messages, for testing)",
        &mca_coll_ftera_fragment_size);
    register_int("verbose", 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        "Verbosity of the ftera component: 0 silent, 1 counters at finalize, 10 every agreement and the "
        "tree of each communicator, 20 failures and stashed messages, 30 every message",
        &mca_coll_ftera_verbose);
    register_counter("instances", "Agreements this process started in ftera's core (every operation)",
                     (unsigned long long *) &mca_coll_ftera_nagree);
    register_counter("minmax", "Of them, agreements with MPI_BOR, MPI_MAX or MPI_MIN (Open MPI's fault-tolerant "
                     "allreduces of the context-id allocation of MPIX_Comm_shrink and MPI_Finalize)",
                     &mca_coll_ftera_pv_minmax);
    register_counter("fallbacks", "Agreement calls ftera handed to the next agreement module (other datatypes, "
                     "counts or operations)", &mca_coll_ftera_pv_fallbacks);
    register_counter("proc_failed", "Agreements decided here with MPI_ERR_PROC_FAILED",
                     &mca_coll_ftera_pv_proc_failed);
    register_counter("agree_ns", "Nanoseconds from the start of each agreement to its decision here, summed",
                     &mca_coll_ftera_pv_agree_ns);
    register_counter("detect_ns", "Nanoseconds from the start of each agreement to the first failure reported "
                     "to it while it ran (the wait for the failure detector), summed", &mca_coll_ftera_pv_detect_ns);
    return OMPI_SUCCESS;
}

static int ftera_open(void)
{
    if (0 != mca_coll_ftera_fragment_size && mca_coll_ftera_fragment_size < MCA_COLL_FTERA_MIN_FRAGMENT) {
        opal_output(0, "coll:ftera: coll_ftera_fragment_size %d is below %d bytes (a 40-byte header and some "
                    "data); using the BTL's eager limit", mca_coll_ftera_fragment_size, MCA_COLL_FTERA_MIN_FRAGMENT);
        mca_coll_ftera_fragment_size = 0;
    }
    if (mca_coll_ftera_verbose > 0) {
        mca_coll_ftera_output = opal_output_open(NULL);
        opal_output_set_verbosity(mca_coll_ftera_output, mca_coll_ftera_verbose);
    }
    return OMPI_SUCCESS;
}

static int ftera_close(void)
{
    mca_coll_ftera_finalize();
    if (mca_coll_ftera_output >= 0) {
        opal_output_close(mca_coll_ftera_output);
        mca_coll_ftera_output = -1;
    }
    return OMPI_SUCCESS;
}
