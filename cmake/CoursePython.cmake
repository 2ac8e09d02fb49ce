# Python tests (PyTorch extensions). Filled in with the month-1 extension exercise.
