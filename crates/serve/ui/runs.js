/* placeholder: the console's runs.js */
