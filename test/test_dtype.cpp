// placeholder: reduced-precision tests (issue 4)
