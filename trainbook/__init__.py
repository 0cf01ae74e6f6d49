"trainbook: a Jupyter-first toolkit for training ML models well."
# Hand-written (nbdev does not generate this file): the public names, loaded lazily (PEP 562) so that
# `import trainbook` costs little over `import torch` and never imports plotly, ipywidgets, xgboost or
# scikit-learn until a name that needs them is used.
__version__ = "0.1.0"

import importlib as _importlib
import signal as _signal, sys as _sys, threading as _threading

_EXPORTS = {
    "core": ["TrainConfig", "Finding", "History", "findings_html", "seed_everything", "rng_state",
             "set_rng_state", "loader_generators", "environment", "loader_length", "pick_device", "pick_precision",
             "autocast_dtype",
             "atomic_write"],
    "checks": ["check_data", "DataReport", "infer_task"],
    "columns": ["column_roles", "dtype_family", "ROLES"],
    "serving": ["psi", "serving_findings"],
    "splits": ["make_splits", "Splits", "nested_splits"],
    "audit": ["fingerprint_frame", "audit_parts", "RowHashes"],
    "data": ["TensorLoader", "make_preprocessor", "loaders_from_frame", "FramePrep", "ServingReport",
             "fingerprint_data"],
    "batch": ["split_batch", "to_device", "call_model", "eval_mode", "prediction", "model_loss",
              "training_lock", "stop_requested", "rows_in", "whole_output", "wants_whole_output", "compute_loss",
              "describe"],
    "loss_checks": ["check_loss_shapes", "ShapeMismatch", "TargetsOutOfRange"],
    "events": ["Event", "Callback", "Callbacks", "Control", "LoopState"],
    "optim": ["param_groups", "make_scheduler", "warmup_cosine", "one_cycle", "constant", "scale_lr",
              "lr_find", "LRFinder", "optimizer_step", "pick_scheduler_interval", "train_step"],
    "checkpoint": ["save_checkpoint", "load_checkpoint", "read_checkpoint", "restore_checkpoint",
                   "UnsafeCheckpointError", "CheckpointError", "checkpoint_file", "Checkpointer", "probe_writable",
                   "unwritable", "prepare_run_dir"],
    "folder_lock": ["RunFolderBusy", "release_run_dir", "folder_writer", "FolderLock"],
    "resume": ["run_signature", "saved_signature", "resume_changes", "Position", "BufferSnapshot"],
    "guard": ["check_loss_fn", "check_loader", "require_batches", "check_monitor", "nonfinite_validation",
              "check_fit_inputs"],
    "metrics": ["accuracy", "sk_metric", "resolve_metrics", "classification_metrics", "regression_metrics",
                "class_weights", "focal_loss", "ignore_index_of", "IGNORE_INDEX"],
    "run": ["Run", "last_run", "StopReason"],
    "evaluation": ["evaluate"],
    "loop": ["fit", "show_loop", "Setup"],
    "recorder": ["Recorder", "EarlyStopping", "StepProfiler", "run_callbacks", "end_run"],
    "rounds": ["RoundRecorder"],
    "diagnostics": ["diagnose"],
    "readings": ["Thresholds", "nonfinite_loss"],
    "triage": ["NanGuard", "locate_nonfinite", "top_losses", "ExampleLosses", "per_example_loss", "backward_anomaly",
               "confident_wrong", "LossStats", "Evaluation"],
    "sanity": ["overfit_batch", "check_init_loss", "SanityReport"],
    "preflight": ["summary", "ModelSummary", "dry_run", "DryRunReport", "PeakMemory"],
    "batchsize": ["find_batch_size", "BatchSizeResult"],
    "live": ["LiveCurves", "plot_history", "plot_grad_norms", "as_static"],
    "progress": ["Progress"],
    "figures": ["plot_lr_find", "plot_overfit", "portable_outputs"],
    "widgets": ["SplitBuilder", "TrainPanel", "StudyPanel"],
    "magics": ["Checklist"],
    "distributed": ["launch", "LaunchError", "shard_loader"],
    "classical": ["baseline", "cross_validate", "nested_cv", "tune_threshold", "pr_curve_figure", "compare",
                  "score_torch", "score_model"],
    "gbdt": ["fit_xgboost", "fit_lightgbm", "fit_catboost", "BoostedModel", "BoostingLibrary", "booster_library"],
    "modelfiles": ["ModelFileError", "check_xgboost_json", "check_lightgbm_text", "check_catboost_file",
                   "file_sha256"],
    "integrations": ["keras_callback", "atomic_keras_save", "TorchClassifier", "TorchRegressor",
                     "TrainingWarning", "mlp", "TokenLoader"],
    "huggingface": ["trainer_callback"],
    "tracking": ["track", "untrack", "Tracker", "to_tensorboard", "log_run", "run_params", "active_tracker", "sync"],
    "experiments": ["runs", "load_run", "compare_runs", "RunBrowser"],
    "store": ["safe_key", "safe_items", "check_server", "mark_dead_runs"],
    "tuning": ["search", "SearchResult", "Pruning", "fit_objective", "TrialFailed"],
    # check_data, make_splits, fit_xgboost and baseline take a Spark DataFrame too (they hand it to `spark`)
    "spark": ["spark_session", "is_spark_frame", "SparkDataReport"],
    "spark_splits": ["SparkSplits"],
    "parquet": ["ParquetLoader", "fit_prep"],
    "parquet_splits": ["split_files", "write_split_column"],
    "ray_engine": ["RayLoader"],  # launch(engine="ray") and search(engine="ray") are the way in; ray loads lazily
    "jax_loop": ["fit_flax", "evaluate_flax", "overfit_batch_flax", "lr_find_flax"],
    "jax_steps": ["FlaxState"],
    "jax_parts": ["KeyStreams", "FlaxNanGuard", "optax_schedule", "read_flax_checkpoint", "is_flax_model"],
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def _import_whole(name: str):
    """Import module `name` with a Ctrl-C held until the import is over, then delivered as it was meant. The
    first public name used imports torch, which registers its operators process-wide: a torch import cut short
    by Ctrl-C cannot be retried (every later call of the session failed, or the interpreter aborted). A second
    Ctrl-C interrupts at once, as `DeferredCtrlC`'s does: an import that hangs can still be stopped."""
    main = _threading.current_thread() is _threading.main_thread()
    if name in _sys.modules or not main or _signal.getsignal(_signal.SIGINT) is None:  # no Python handler to hold
        return _importlib.import_module(name)
    held = []

    def hold(signum, frame):
        held.append(signum)
        if len(held) == 2:  # the second: to the handler it was meant for, now
            _signal.signal(_signal.SIGINT, previous)
            _signal.raise_signal(_signal.SIGINT)

    previous = _signal.signal(_signal.SIGINT, hold)
    try:
        return _importlib.import_module(name)
    finally:
        _signal.signal(_signal.SIGINT, previous)
        if len(held) == 1: _signal.raise_signal(_signal.SIGINT)  # the Ctrl-C, to the handler it was meant for


def __getattr__(name):
    mod = _WHERE.get(name)
    if mod is None: raise AttributeError(f"module 'trainbook' has no attribute {name!r}")
    value = getattr(_import_whole(f"trainbook.{mod}"), name)
    globals()[name] = value
    return value


def __dir__(): return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython):
    "`%load_ext trainbook`: register the magics."
    from trainbook.magics import load_ipython_extension as load
    load(ipython)


def unload_ipython_extension(ipython):
    from trainbook.magics import unload_ipython_extension as unload
    unload(ipython)
