/* placeholder: the console's tools.js */
