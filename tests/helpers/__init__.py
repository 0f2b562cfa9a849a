"""Helpers the test folders share: toy models and data (toy, fit, records, burn_mnist_model), file
writers (idx, images, hostile, fuzz), the app's config (app), assertion helpers (expect), paths
(paths), and the scripts tests run as child processes (ddp_*, killable_train, async_kill_save)."""
